"""`rtbench kernel`: the kernels QEMU targets boot."""

from __future__ import annotations

import click
from rich.table import Table

from rtbench.commands.common import err, fail, out
from rtbench.targets import kernels


@click.group()
def kernel() -> None:
    """Kernels for QEMU targets (qemu:debian-rt, qemu:debian-generic)."""


@kernel.command()
@click.argument("names", nargs=-1, required=True, type=click.Choice(sorted(kernels.KNOWN)))
def fetch(names: tuple[str, ...]) -> None:
    """Download Debian's kernel package NAME (apt-get download) into the cache.

    Any other x86_64 kernel boots too: give its bzImage as qemu:PATH.
    """
    for name in names:
        try:
            with err.status(f"fetching {name}…"):
                k = kernels.fetch(name)
        except kernels.KernelError as e:
            fail(str(e))
        except OSError as e:
            fail(f"cannot write the kernel cache {kernels.cache_root()}: {e.strerror}")
        out.print(f"{name}: {k.package} {k.version} (kernel {k.release}) at {k.image}")


@kernel.command(name="list")
def list_kernels() -> None:
    """The kernels already fetched."""
    t = Table(header_style="bold")
    for col in ("name", "release", "package", "version", "image"):
        t.add_column(col)
    for name in kernels.KNOWN:
        k = kernels.cached(name)
        if k is None:
            t.add_row(name, "[dim]not fetched[/dim]", "", "", f"rtbench kernel fetch {name}")
        else:
            t.add_row(name, k.release, k.package, k.version, str(k.image))
    out.print(t)


def register(main: click.Group) -> None:
    """Adds this module's commands to the `rtbench` group."""
    main.add_command(kernel)
