"""Model layer: the setting of an audit and the output laws of A_D.

Missingness mechanisms (``missingness``), the query catalogue (``queries``), calibrated
releases (``release``), neighbouring pairs and the worst-case search (``neighbours``), and the
implementations audited as black boxes (``implementation``).
"""
