"""The agents we serve, one module each, and the registry that lists them (:mod:`.registry`).

Nothing is imported here: the hook, which runs before every prompt, imports the registry and its one agent's module.
"""
