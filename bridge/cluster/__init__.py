"""One cluster state for every driver: the kernel, the physical truth, the decisions applied, the view."""
import policies  # noqa: F401  # first: its finder decides compiled or pure core before this package's modules load
