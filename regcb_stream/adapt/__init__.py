"""What a learner adds on top of RegCB's decisions: delayed rewards, model selection,
change detection."""
