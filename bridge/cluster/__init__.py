"""One cluster state for every driver: the kernel, the physical truth, the decisions applied, the view."""
