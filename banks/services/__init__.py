"""Every write of the domain. Interfaces (API, UI, CLI, tasks, admin) call these and nothing else."""
