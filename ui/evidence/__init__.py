"""What backs an answer, shown: sources, retrieval ranks, answer and claim checks, graphs, charts, calibration."""
