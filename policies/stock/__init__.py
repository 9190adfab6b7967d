"""The platforms' own schedulers as the simulator plays them: YARN-like FIFO (``fifo``, the
stand-in ``stock``) and Spark's FAIR with a pool per user job (``fair``, ``stock-fair``)."""
