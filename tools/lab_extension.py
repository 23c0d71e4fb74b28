"""The Jupyter server extension that ``make lab`` enables (``tools/lab_config.py``): notebooks
under ``notebooks/`` are saved as git's notebook filter stores them (:func:`nbstrip.save_hook`).

The hook is registered on the server's contents manager (``register_pre_save_hook``, jupyter
server 2's way to add one) rather than set as ``FileContentsManager.pre_save_hook``: that trait is
checked each time the configuration is applied, and the server applies it more than once (once
more when jupytext, which otter-grader brings, swaps in its own contents manager), so the server
log warned "Overriding existing pre_save_hook" at every start.
"""

from nbstrip import save_hook


def _jupyter_server_extension_points():
    return [{"module": "lab_extension"}]


def _hook(serverapp) -> None:
    manager = serverapp.contents_manager
    if not getattr(manager, "_uneven_strips_on_save", False):
        manager.register_pre_save_hook(save_hook)
        manager._uneven_strips_on_save = True


def _load_jupyter_server_extension(serverapp) -> None:
    _hook(serverapp)


async def _start_jupyter_server_extension(serverapp) -> None:
    # Every extension is loaded by now: if one replaced the contents manager after this one was
    # loaded (jupytext does, when it loads), the new manager gets the hook too.
    _hook(serverapp)
