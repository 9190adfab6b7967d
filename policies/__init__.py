"""The policy engine. Importing it first decides whether the compiled core runs (``compiled``)."""
from policies.compiled import activate

activate()
