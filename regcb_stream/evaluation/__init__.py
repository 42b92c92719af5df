"""Evaluation on logs: off-policy estimates, explore-eval, and regcb-compare."""
