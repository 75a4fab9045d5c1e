"""A run as it happens and after: live progress, the review panel, the result tabs, the trace, What if?"""
