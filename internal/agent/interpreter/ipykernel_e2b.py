"""Run by kernel_driver.py inside each python kernel at start (after
ipykernel_fast.py, in a namespace of its own: nothing is bound in the
user's).

It registers the display formatters E2B's code-interpreter template adds
(its startup_scripts/0002_data.py), so results carry the same fields:
- e2b/data (Result.data): a pandas DataFrame as {column: [values]}, with
  Timestamps as ISO strings and NaN as null;
- application/json (Result.json): any list or dict that round-trips through
  JSON (numpy values as plain numbers, non-string keys as strings).
E2B's e2b/chart (Result.chart) comes from its e2b_charts package, which the
template does not ship: charts arrive as PNG only.
Each formatter applies only where IPython has what it expects."""

import json
import math


def _plain(value):
    """A JSON-safe scalar: numpy values unwrapped, Timestamps as ISO
    strings, NaN and infinities as None (orjson's choice on E2B)."""
    if hasattr(value, "isoformat"):
        return value.isoformat()
    if hasattr(value, "item") and not isinstance(value, (list, dict, str)):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _default(obj):
    if hasattr(obj, "tolist"):
        return obj.tolist()
    if hasattr(obj, "isoformat"):
        return obj.isoformat()
    raise TypeError(type(obj).__name__)


def _register():
    import IPython
    from IPython.core.formatters import BaseFormatter, JSONFormatter
    from traitlets import ObjectName, Unicode

    def dataframe_data(df):
        return json.loads(json.dumps(
            {str(k): [_plain(v) for v in col] for k, col in df.to_dict(orient="list").items()},
            default=_default))

    class E2BDataFormatter(BaseFormatter):
        format_type = Unicode("e2b/data")
        print_method = ObjectName("_repr_e2b_data_")
        _return_type = (dict, str)

        def __call__(self, obj):
            cls = type(obj)
            if cls.__name__ == "DataFrame" and cls.__module__.startswith("pandas"):
                try:
                    return dataframe_data(obj)
                except Exception:  # noqa: BLE001 - no data, as for any other object
                    return None
            return super().__call__(obj)

    class E2BJSONFormatter(JSONFormatter):
        def __call__(self, obj):
            if isinstance(obj, (list, dict)):
                try:
                    return json.loads(json.dumps(obj, default=_default, allow_nan=False)), {"expanded": True}
                except (TypeError, ValueError):
                    pass
            return super().__call__(obj)

    fmt = IPython.get_ipython().display_formatter
    fmt.formatters["e2b/data"] = E2BDataFormatter(parent=fmt)
    fmt.formatters["application/json"] = E2BJSONFormatter(parent=fmt)


try:
    _register()
except Exception:  # noqa: BLE001 - results keep IPython's own formats
    pass
