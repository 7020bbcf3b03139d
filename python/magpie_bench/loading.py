"""Import `module:callable` targets, from a given folder when one is named.

Candidate and baseline often share a module name in different folders, so a
folder's module is loaded from its file under a unique name.
"""
import importlib
import importlib.util
import os
import sys


def load_module(name, folder=None):
    if folder:
        path = os.path.join(folder, *name.split(".")) + ".py"
        if os.path.exists(path):
            unique = "magpie_target_%d_%s" % (abs(hash(os.path.abspath(path))), name.replace(".", "_"))
            if unique in sys.modules:
                return sys.modules[unique]
            if folder not in sys.path:
                sys.path.insert(0, folder)  # the module's own imports
            spec = importlib.util.spec_from_file_location(unique, path)
            mod = importlib.util.module_from_spec(spec)
            sys.modules[unique] = mod
            spec.loader.exec_module(mod)
            return mod
    return importlib.import_module(name)


def load_target(spec, folder=None):
    """'pkg.mod:func' or 'pkg.mod.func' -> the object."""
    if ":" in spec:
        mod_name, attr = spec.split(":", 1)
    else:
        mod_name, _, attr = spec.rpartition(".")
    obj = load_module(mod_name, folder)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj
