"""No op classes for the hipdnn namespace: see __init__.py."""
