"""Contexts and actions as feature rows: the encoder, the rows, random features."""
