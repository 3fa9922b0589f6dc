"""``context-companion setup``: write (or remove) an agent's hooks or plugin file.

:mod:`.command` merges our hooks into an agent's JSON settings file (its module's ``setup_file()``, a
:class:`~..agents.model.SettingsHooks`), :mod:`.plugin` writes a plugin file of ours for an agent that loads plugins
(a :class:`~..agents.model.PluginFile`), :mod:`.files` is what both share: the bounded read, the hook command, the
atomic write and the record of what setup created; :mod:`.personal_ignore` keeps a project file teams do not commit
out of git as Claude Code does.
"""
