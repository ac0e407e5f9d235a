"""The trust model: which generations reviewers would call correct."""
