"""Side-by-side tables and plots of replay (live) and simulator results directories."""
