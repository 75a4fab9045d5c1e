"""Every sentence checked: an answer's claims against the run's documents (rules, then the model)."""
