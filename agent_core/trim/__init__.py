"""Trim policies: what short-term memory drops when it grows too long.

``base`` (the ``TrimPolicy`` protocol, its optional incremental hook, group
helpers), one module per family (``window``, ``budget``, ``summary``,
``langchain``, ``compose``), ``config`` (parameters derived from each
policy's typed config) and ``registry`` (name -> policy).
"""
