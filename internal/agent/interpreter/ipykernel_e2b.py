"""Run by kernel_driver.py inside each python kernel at start (after
ipykernel_fast.py, in a namespace of its own: nothing is bound in the
user's).

It registers the display formatters E2B's code-interpreter template adds
(its startup_scripts/0002_data.py), so results carry the same fields:
- e2b/data (Result.data): a pandas DataFrame as {column: [values]}, with
  Timestamps as ISO strings and NaN as null;
- application/json (Result.json): any list or dict that round-trips through
  JSON (numpy values as plain numbers, non-string keys as strings, NaN and
  infinities as null, as orjson writes them on E2B).
- e2b/chart (Result.chart): a matplotlib Figure's chart data, as E2B's
  e2b_charts package extracts it, by ipykernel_charts.py (path in the
  _charts global the driver sets), read on the first Figure displayed.
Each formatter applies only where IPython has what it expects.

It also does what the template's startup_scripts/0003_images.py does to
PIL, once PIL.Image is first imported (a one-shot import hook: the kernel
does not import PIL at start): Image.show() displays the image (a PNG
result) instead of looking for a viewer, and Image.save() to a path given
as a string displays it too."""

import importlib.util
import json
import math
import sys


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


def _null(_constant):
    """NaN, Infinity and -Infinity read back from JSON: null."""
    return None


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

    charts = {}

    def figure_chart(fig):
        if not charts:
            with open(_charts) as f:  # noqa: F821 - set by kernel_driver.py
                exec(f.read(), charts)
        return charts["figure_chart"](fig)

    class E2BChartFormatter(BaseFormatter):
        format_type = Unicode("e2b/chart")
        print_method = ObjectName("_repr_e2b_chart_")
        _return_type = (dict, str)

        def __call__(self, obj):
            cls = type(obj)
            if cls.__name__ == "Figure" and cls.__module__.startswith("matplotlib"):
                try:
                    return figure_chart(obj)
                except Exception:  # noqa: BLE001 - the PNG still arrives
                    return None
            return super().__call__(obj)

    class E2BJSONFormatter(JSONFormatter):
        def __call__(self, obj):
            if isinstance(obj, (list, dict)):
                try:
                    return json.loads(json.dumps(obj, default=_default), parse_constant=_null), {"expanded": True}
                except (TypeError, ValueError):
                    pass
            return super().__call__(obj)

    fmt = IPython.get_ipython().display_formatter
    fmt.formatters["e2b/data"] = E2BDataFormatter(parent=fmt)
    fmt.formatters["e2b/chart"] = E2BChartFormatter(parent=fmt)
    fmt.formatters["application/json"] = E2BJSONFormatter(parent=fmt)


def _patch_pil(module):
    from IPython.display import display
    image = module.Image
    save = image.save

    def show_image(self, title=None):
        display(self)

    def save_image(self, fp, format=None, **params):
        if isinstance(fp, str):
            display(self)
        return save(self, fp, format, **params)

    image.show, image.save = show_image, save_image


class _PILHook:
    """A meta path finder that patches PIL.Image right after its first
    import, then leaves sys.meta_path."""

    def find_spec(self, name, path=None, target=None):
        if name != "PIL.Image":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            try:
                _patch_pil(module)
            except Exception:  # noqa: BLE001 - PIL as it is
                pass
        spec.loader.exec_module = exec_module
        return spec


try:
    _register()
except Exception:  # noqa: BLE001 - results keep IPython's own formats
    pass
if "PIL.Image" in sys.modules:
    _patch_pil(sys.modules["PIL.Image"])
else:
    sys.meta_path.insert(0, _PILHook())
