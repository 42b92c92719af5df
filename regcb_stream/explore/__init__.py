"""The explore layer: epochs, loss budgets and the decisions they give, over an oracle."""
