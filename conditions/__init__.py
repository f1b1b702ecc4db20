"""The paper's Conditions 1-3: statement, witness schema and check of each, one module per condition."""
