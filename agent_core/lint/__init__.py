"""The protocol linter: rule catalogue (rules), provider profiles with their exact error texts (profiles),
findings with native paths (finding), the scan over the provider-neutral chain (scan) and repair."""
