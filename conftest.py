# The plugin is loaded through its pytest11 entry point once the project is installed
# (pip install -e .); nothing to add here. Kept at the root so pytest's rootdir is the
# project, which suite discovery (suite.toml lookup) stops at.
