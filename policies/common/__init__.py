"""Mechanisms shared by several policies: small pure functions, composed by policies, never switched by flags."""
