"""The policy engine. Importing it installs the finder that decides, at the first import of a
compiled module, whether the compiled core runs (``compiled``)."""
from policies.framework.compiled import install

install()
