"""Type stub of the compiled kernels (``_kernels.c``): their functions take buffers and are typed ``Any``.

Without it a type checker, which cannot read the extension module, would see no attribute of it.
"""

from typing import Any

def __getattr__(name: str) -> Any: ...
