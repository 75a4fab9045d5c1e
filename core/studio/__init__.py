"""Features over runs: what-if forks, steps and diffs, compare, evaluate, question sets, export, diagrams."""
