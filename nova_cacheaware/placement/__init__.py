"""The cache providers in Placement: sync and state of the model.

doc/source/admin/placement.rst and
doc/source/contributor/architecture.rst.
"""
