"""Detectors on text: the prompt-injection score, validated PII, repetition (seq-rep-n).

Offline, deterministic and cheap, so both the canary eval (`evaluation/`) and the
gateway's request path (`serving/`) run the same ones; neither imports the other.
"""
