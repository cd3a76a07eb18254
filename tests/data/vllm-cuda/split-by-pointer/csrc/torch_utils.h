// ppbench test fixture. Not vLLM code.
