"""The vocabulary every layer shares: ``Msg`` (msg), ids, the error tree (errors), input limits, paths,
the parent links of the Function Calling flow (parents) and the one table of model facts (models)."""
