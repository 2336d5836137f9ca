"""Tools the agent can call: plain Python functions registered with ``@tool``.

The JSON schema comes from the type hints and the Google-style docstring,
so a tool is written once and described to the model for free.
"""
from __future__ import annotations

import ast
import inspect
import json
import operator
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Callable, get_type_hints
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from agent_core.core.errors import ToolError

_JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean", list: "array", dict: "object"}


@dataclass(frozen=True)
class Tool:
    """A callable with the schema the model sees."""

    name: str
    description: str
    parameters: dict
    fn: Callable[..., Any]

    def schema(self) -> dict:
        """The ``tools`` entry of a Chat Completions request."""
        return {"type": "function",
                "function": {"name": self.name, "description": self.description, "parameters": self.parameters}}

    def run(self, arguments: str | dict) -> str:
        """Run with the model's JSON arguments; the result is always a string for the tool message."""
        try:
            args = json.loads(arguments) if isinstance(arguments, str) else dict(arguments)
        except json.JSONDecodeError as err:
            raise ToolError(f"{self.name}: arguments are not valid JSON ({err.msg})") from None
        if not isinstance(args, dict):
            raise ToolError(f"{self.name}: arguments must be a JSON object")
        try:
            result = self.fn(**args)
        except TypeError as err:
            raise ToolError(f"{self.name}: {err}") from None
        return result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)


def _docstring_parts(doc: str) -> tuple[str, dict[str, str]]:
    summary_lines, params, in_args = [], {}, False
    for line in inspect.cleandoc(doc or "").splitlines():
        stripped = line.strip()
        if stripped in ("Args:", "Arguments:", "Parameters:"):
            in_args = True
            continue
        if in_args:
            m = re.match(r"(\w+)\s*(\([^)]*\))?:\s*(.*)", stripped)
            if m:
                params[m.group(1)] = m.group(3)
                continue
            if stripped.endswith(":") or not stripped:
                in_args = stripped == ""
                continue
        elif stripped:
            summary_lines.append(stripped)
    return " ".join(summary_lines), params


def tool(fn: Callable[..., Any] | None = None, *, name: str | None = None):
    """Decorator: turn a typed, documented function into a ``Tool``."""
    def wrap(f: Callable[..., Any]) -> Tool:
        hints = get_type_hints(f)
        summary, arg_docs = _docstring_parts(f.__doc__ or "")
        properties, required = {}, []
        for pname, param in inspect.signature(f).parameters.items():
            prop: dict[str, Any] = {"type": _JSON_TYPES.get(hints.get(pname, str), "string")}
            if pname in arg_docs:
                prop["description"] = arg_docs[pname]
            properties[pname] = prop
            if param.default is inspect.Parameter.empty:
                required.append(pname)
        parameters = {"type": "object", "properties": properties, "required": required}
        return Tool(name=name or f.__name__, description=summary, parameters=parameters, fn=f)

    return wrap(fn) if fn is not None else wrap


class ToolRegistry:
    """The tools offered to the model, by name."""

    def __init__(self, tools: list[Tool] | None = None):
        self._tools: dict[str, Tool] = {}
        for t in tools or []:
            self.register(t)

    def register(self, t: Tool) -> Tool:
        self._tools[t.name] = t
        return t

    def schemas(self) -> list[dict]:
        return [t.schema() for t in self._tools.values()]

    def names(self) -> list[str]:
        return list(self._tools)

    def run(self, name: str, arguments: str | dict) -> str:
        """Run a tool; errors come back as a JSON error string so the model can recover."""
        t = self._tools.get(name)
        if t is None:
            return json.dumps({"error": f"unknown tool {name!r}"}, ensure_ascii=False)
        try:
            return t.run(arguments)
        except ToolError as err:
            return json.dumps({"error": str(err)}, ensure_ascii=False)


# --- bundled tools --------------------------------------------------------

WEATHER = {
    "成都": {"city": "成都", "condition": "多云", "temperature_c": 18, "humidity": 72},
    "北京": {"city": "北京", "condition": "晴", "temperature_c": 6, "humidity": 30},
    "上海": {"city": "上海", "condition": "小雨", "temperature_c": 14, "humidity": 85},
    "深圳": {"city": "深圳", "condition": "晴", "temperature_c": 24, "humidity": 65},
    "杭州": {"city": "杭州", "condition": "阴", "temperature_c": 12, "humidity": 78},
    "paris": {"city": "Paris", "condition": "cloudy", "temperature_c": 9, "humidity": 80},
    "london": {"city": "London", "condition": "rain", "temperature_c": 8, "humidity": 88},
    "new york": {"city": "New York", "condition": "sunny", "temperature_c": 5, "humidity": 45},
    "tokyo": {"city": "Tokyo", "condition": "clear", "temperature_c": 11, "humidity": 50},
    "berlin": {"city": "Berlin", "condition": "overcast", "temperature_c": 4, "humidity": 76},
}
_CITY_ALIASES = {"chengdu": "成都", "beijing": "北京", "shanghai": "上海", "shenzhen": "深圳", "hangzhou": "杭州"}


@tool
def get_weather(city: str) -> dict:
    """Get the current weather for a city (canned offline data).

    Args:
        city: City name, in Chinese or English, e.g. 成都 or Paris.
    """
    key = city.strip().lower()
    key = _CITY_ALIASES.get(key, key)
    data = WEATHER.get(key) or WEATHER.get(city.strip())
    return dict(data) if data else {"city": city, "error": "no weather data for this city"}


_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow}
_UNARY = {ast.UAdd: operator.pos, ast.USub: operator.neg}


def _evaluate(node: ast.AST) -> float | int:
    if isinstance(node, ast.Expression):
        return _evaluate(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _evaluate(node.left), _evaluate(node.right)
        if isinstance(node.op, ast.Pow) and (abs(right) > 100 or abs(left) > 1e6):
            raise ToolError("exponent too large")
        return _BINARY[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_evaluate(node.operand))
    raise ToolError("only numbers, + - * / // % ** and parentheses are allowed")


@tool
def calculate(expression: str) -> dict:
    """Evaluate an arithmetic expression safely (no code is executed).

    Args:
        expression: Arithmetic such as (12 + 30) * 2 / 7.
    """
    text = expression.replace("×", "*").replace("÷", "/").replace("（", "(").replace("）", ")")
    if len(text) > 200:
        raise ToolError("expression too long")
    try:
        value = _evaluate(ast.parse(text, mode="eval"))
    except SyntaxError:
        raise ToolError(f"not an arithmetic expression: {expression!r}") from None
    except ZeroDivisionError:
        raise ToolError("division by zero") from None
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        value = int(value)
    return {"expression": expression, "result": value}


_TZ_ALIASES = {"北京": "Asia/Shanghai", "上海": "Asia/Shanghai", "成都": "Asia/Shanghai", "china": "Asia/Shanghai",
               "beijing": "Asia/Shanghai", "tokyo": "Asia/Tokyo", "东京": "Asia/Tokyo", "london": "Europe/London",
               "伦敦": "Europe/London", "paris": "Europe/Paris", "new york": "America/New_York",
               "纽约": "America/New_York", "utc": "UTC"}


@tool
def get_time(timezone: str) -> dict:
    """Get the current local time in a timezone.

    Args:
        timezone: An IANA timezone such as Asia/Shanghai, or a city name.
    """
    name = _TZ_ALIASES.get(timezone.strip().lower(), _TZ_ALIASES.get(timezone.strip(), timezone.strip()))
    try:
        zone = ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ToolError(f"unknown timezone {timezone!r}") from None
    now = datetime.now(zone)
    return {"timezone": name, "time": now.strftime("%Y-%m-%d %H:%M:%S"), "utc_offset": now.strftime("%z")}


def default_tools() -> ToolRegistry:
    return ToolRegistry([get_weather, calculate, get_time])
