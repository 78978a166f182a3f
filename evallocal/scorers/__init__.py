"""Scorers: each decides what to ask its judges and turns the answers into a score."""
