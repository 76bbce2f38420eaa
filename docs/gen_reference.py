"""mkdocs hook: the configuration and CLI reference pages, generated at build time.

A page holding `<!-- reference: configuration -->` gets the config model's blocks (every pydantic
model under `ecomrlve.config.EcomConfig`: field, type, default, description); a page holding
`<!-- reference: cli -->` gets every command of the `ecomrlve` typer app (usage, arguments and
options with their types, defaults and help). Nothing is copied by hand, so the pages cannot
drift from the code: `mkdocs build --strict` (tests/test_docs_site.py) rebuilds them.
"""

from __future__ import annotations

import enum
import inspect
import re
import types
import typing
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

CONFIG_MARK = "<!-- reference: configuration -->"
CLI_MARK = "<!-- reference: cli -->"


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if CONFIG_MARK in markdown:
        markdown = markdown.replace(CONFIG_MARK, config_reference())
    if CLI_MARK in markdown:
        markdown = markdown.replace(CLI_MARK, cli_reference())
    return markdown


def _cell(text: object) -> str:
    """One table cell: a single line, pipes escaped."""
    return re.sub(r"\s+", " ", str(text)).strip().replace("|", "\\|")


def _code(text: object) -> str:
    """A code cell: the table splits no row at a pipe inside backticks, so none is escaped."""
    return "`" + re.sub(r"\s+", " ", str(text)).strip() + "`" if str(text) != "" else ""


# ---- configuration ------------------------------------------------------------------------------


def _type_name(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Literal:
        return " | ".join(repr(a) for a in args)
    if origin in (typing.Union, types.UnionType):
        return " | ".join(_type_name(a) for a in args)
    if origin is not None:
        name = getattr(origin, "__name__", str(origin))
        return f"{name}[{', '.join(_type_name(a) for a in args)}]"
    if annotation is type(None):
        return "None"
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return " | ".join(repr(m.value) for m in annotation)
    return getattr(annotation, "__name__", str(annotation))


def _nested_model(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return None


def _default(field: Any) -> str:
    if field.default_factory is not None:
        value = field.default_factory()
        if isinstance(value, BaseModel):
            return ""
    elif field.default is PydanticUndefined:
        return "required"
    else:
        value = field.default
    if isinstance(value, enum.Enum):
        value = value.value
    return _code(repr(value) if isinstance(value, str) else value)


def _model_section(path: str, model: type[BaseModel], out: list[str]) -> None:
    nested: list[tuple[str, type[BaseModel]]] = []
    out.append(f"### `{path}`\n")
    doc = inspect.getdoc(model)
    if doc and model.__doc__ is not None and "__doc__" in model.__dict__:
        out.append(doc + "\n")
    out.append("| field | type | default | description |")
    out.append("|---|---|---|---|")
    for name, field in model.model_fields.items():
        sub = _nested_model(field.annotation)
        if sub is not None:
            nested.append((f"{path}.{name}", sub))
            kind, default = f"block `{path}.{name}`", ""
        else:
            kind, default = _code(_type_name(field.annotation)), _default(field)
        out.append(f"| `{name}` | {kind} | {default} | {_cell(field.description or '')} |")
    out.append("")
    for sub_path, sub in nested:
        _model_section(sub_path, sub, out)


def config_reference() -> str:
    """Every block of `EcomConfig`, top-level first, each nested block after its parent."""
    from ecomrlve.config import EcomConfig

    out: list[str] = []
    for name, field in EcomConfig.model_fields.items():
        model = _nested_model(field.annotation)
        if model is not None:
            _model_section(name, model, out)
    return "\n".join(out)


# ---- command line -------------------------------------------------------------------------------


def _param_row(param: Any, ctx: Any) -> str:
    if param.param_type_name == "argument":
        names = f"`{param.name.upper()}` (argument)"
    else:
        names = ", ".join(f"`{n}`" for n in param.opts)
        if param.secondary_opts:
            names += " / " + ", ".join(f"`{n}`" for n in param.secondary_opts)
    kind = "flag" if getattr(param, "is_flag", False) else param.display_type(ctx).strip("<>")
    default = param.default
    if param.required:
        shown = "required"
    elif default is None or callable(default) or default == ():
        shown = ""
    else:
        if isinstance(default, enum.Enum):
            default = default.value
        if isinstance(default, Path):
            default = str(default)
        shown = _code(default)
    return f"| {names} | {_cell(kind)} | {shown} | {_cell(getattr(param, 'help', '') or '')} |"


def _command_section(name: str, command: Any, out: list[str]) -> None:
    if getattr(command, "hidden", False):
        return
    if hasattr(command, "commands"):  # a group: its commands in place
        for sub_name in sorted(command.commands):
            _command_section(f"{name} {sub_name}", command.commands[sub_name], out)
        return
    ctx = command.context_class(command, info_name=name)
    usage = " ".join(command.collect_usage_pieces(ctx))
    out.append(f"### `{name}`\n")
    out.append(f"```text\n{name} {usage}\n```\n")
    if command.help:
        out.append(inspect.cleandoc(command.help) + "\n")
    params = [p for p in command.params if not getattr(p, "hidden", False)]
    if params:
        out.append("| argument / option | type | default | help |")
        out.append("|---|---|---|---|")
        out += [_param_row(p, ctx) for p in params]
        out.append("")


def cli_reference() -> str:
    """Every command of the `ecomrlve` app, in alphabetical order, subcommands in place."""
    import typer

    from ecomrlve.cli import app

    group = typer.main.get_command(app)  # a click group (typer carries its own click)
    out: list[str] = []
    ctx = group.context_class(group, info_name="ecomrlve")
    out.append(f"```text\necomrlve {' '.join(group.collect_usage_pieces(ctx))}\n```\n")
    out.append("| global option | type | default | help |")
    out.append("|---|---|---|---|")
    out += [_param_row(p, ctx) for p in group.params if not getattr(p, "hidden", False)]
    out.append("")
    for name in sorted(group.commands):
        _command_section(f"ecomrlve {name}", group.commands[name], out)
    return "\n".join(out)
