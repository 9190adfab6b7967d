"""Psychas & Ghaderi: scheduling jobs with random resource requirements (BF-J/S, VQS, VQS-BF)."""
