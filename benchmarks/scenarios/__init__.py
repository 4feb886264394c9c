"""The benchmark scenarios, a module per family; benchmarks/run.py maps each scenario's name to its function,
which gets the Run the runner made for it."""
