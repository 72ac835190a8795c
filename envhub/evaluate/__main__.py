"""``python -m envhub.evaluate ...``: the ``envhub eval`` command on its own."""

import typer

from .cli import eval_command

app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
app.command()(eval_command)

if __name__ == "__main__":
    app()
