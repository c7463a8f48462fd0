"""The kit's own checkov checks (one per file, ids CKV_SBX_<n>).

checkov's ``--external-checks-dir`` loads only folders with an ``__init__.py``; it then executes
every other ``.py`` file here, each of which registers one check.
"""
