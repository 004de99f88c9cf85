"""``hermes approvals list`` and ``hermes approvals revoke``: the standing ("always") grants a human gave.

They live in the configuration file (``[approvals] always``). A running system reads them when it loads; a
revocation takes effect at once, a grant added to the file by hand only at the next load.
"""

from __future__ import annotations

import click

from ._output import emit_json, emit_table
from ._state import get_state

__all__ = ["approvals_group"]


@click.group("approvals")
def approvals_group() -> None:
    """The standing approvals ("always" answers) stored in the configuration file."""


@approvals_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list of grants.")
def list_command(as_json: bool) -> None:
    """List the standing approvals: number, kind, the exact subject approved, and when."""
    from ..security import standing_approvals

    path = get_state().config_path()
    try:
        grants = standing_approvals(path)
    except ValueError as err:
        raise click.ClickException(str(err)) from None
    if as_json:
        emit_json([{"number": n, **g} for n, g in enumerate(grants, 1)])
        return
    if not grants:
        click.echo(f"no standing approvals in {path}", err=True)
        return
    emit_table(
        ["#", "kind", "subject", "added"],
        [[n, g["kind"], g["subject"], g["added"]] for n, g in enumerate(grants, 1)],
        title=f"{len(grants)} standing approvals in {path}",
        prose=("subject",),
    )


@approvals_group.command("revoke")
@click.argument("which", nargs=-1)
@click.option("--all", "everything", is_flag=True, help="Revoke every standing approval.")
def revoke_command(which: tuple[str, ...], everything: bool) -> None:
    """Revoke standing approvals by number (as `hermes approvals list` shows them) or by exact subject.

    Exits 1 when nothing matched.
    """
    from ..security import revoke_approvals

    if not which and not everything:
        raise click.UsageError("name the approvals to revoke (number or exact subject), or pass --all")
    indexes = {int(w) for w in which if w.isdigit()}
    subjects = {w for w in which if not w.isdigit()}
    path = get_state().config_path()
    try:
        removed = revoke_approvals(path, indexes=indexes, subjects=subjects, everything=everything)
    except ValueError as err:
        raise click.ClickException(str(err)) from None
    for grant in removed:
        click.echo(f"revoked {grant['kind']}: {grant['subject']}")
    if not removed:
        click.echo("no standing approval matched", err=True)
        raise SystemExit(1)
