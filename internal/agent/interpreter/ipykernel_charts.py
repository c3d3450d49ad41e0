"""Chart extraction for matplotlib figures: what E2B's e2b_charts package
puts in a result's e2b/chart (Result.chart in the SDKs), which the
code-interpreter-v1 template does not ship. ipykernel_e2b.py executes this
file the first time a Figure is displayed and calls figure_chart(fig).

The shapes, as E2B's SDKs type them (ChartTypes):
- a figure with one Axes is that Axes' chart; with several, a "superchart"
  whose title is the figure's suptitle and whose elements are the Axes'
  charts; with none, no chart;
- every chart has type, title (None when empty) and elements;
- line, scatter, bar and box_and_whisker add x_label, y_label and the units
  in them ("Time (s)" or "Time [s]": "s"); line and scatter add
  x_ticks/y_ticks, x_tick_labels/y_tick_labels and x_scale/y_scale
  ("datetime", "categorical", or matplotlib's scale name);
- line/scatter elements: {label, points: [[x, y], ...]} (dates as ISO
  strings); bar: {label, group, value}; pie: {label, angle, radius};
  box_and_whisker: {label, min, first_quartile, median, third_quartile,
  max, outliers};
- an Axes whose artists are of mixed kinds is "unknown", with no elements.
Bars laid out horizontally (barh) swap the axes' labels and units, as E2B
does. Nothing here is bound in the user's namespace."""

import datetime
import decimal
import math
import re

_UNIT = re.compile(r"\s\((.*?)\)|\[(.*?)\]")


def _round(x):
    """x with the float noise of patch vertices and wedge angles removed,
    as E2B rounds them: 8 significant digits less its order of magnitude
    (323.9999991 is 324, 84.75 stays)."""
    d = x if isinstance(x, decimal.Decimal) else decimal.Decimal(float(x))
    if not d.is_finite() or d.is_zero():
        return float(d)
    with decimal.localcontext() as ctx:
        ctx.prec = max(1, 8 - d.adjusted())
        return float(+d)


def _text(s):
    return s if s else None


def _unit(label):
    m = _UNIT.search(label) if label else None
    return (m.group(1) or m.group(2)) if m else None


def _plain(v):
    """A JSON value for a point coordinate."""
    if isinstance(v, (datetime.date, datetime.datetime)):
        return v.isoformat()
    name = type(v).__name__
    if name == "datetime64":
        return str(v.astype("datetime64[s]"))
    if hasattr(v, "to_timestamp"):  # a pandas Period
        return v.to_timestamp().isoformat()
    if hasattr(v, "item"):
        v = v.item()
    if isinstance(v, (datetime.date, datetime.datetime)):
        return v.isoformat()
    return v


class _Clean(list):
    """A list already plain JSON: _json passes it through as it is."""


def _column(values):
    """A line's or collection's coordinates as plain values; numeric arrays
    in one pass (NaN and infinities as None), others value by value."""
    import numpy
    a = numpy.asarray(values)
    if a.dtype.kind in "iub":
        return a.tolist()
    if a.dtype.kind == "f":
        out = a.tolist()
        if not numpy.isfinite(a).all():
            out = [v if math.isfinite(v) else None for v in out]
        return out
    return [_json(_plain(v)) for v in values]


def _points(xs, ys):
    return _Clean([x, y] for x, y in zip(_column(xs), _column(ys)))


def _is_dates(axis):
    conv = getattr(axis, "converter", None) or getattr(axis, "get_converter", lambda: None)()
    return conv is not None and "Date" in type(conv).__name__


def _ticks(axis, ticks):
    if _is_dates(axis):
        from matplotlib.dates import num2date
        return [num2date(t).isoformat() for t in ticks]
    return [float(t) if isinstance(t, (int, float)) else _plain(t) for t in ticks]


def _scale(axis, scale, ticks, labels):
    """datetime, categorical (ticks 0..n-1 labelled otherwise) or scale."""
    if _is_dates(axis):
        return "datetime"
    if scale != "linear":
        return scale
    for i, (tick, label) in enumerate(zip(ticks, labels)):
        if not (isinstance(tick, (int, float)) and tick == i and str(i) != label):
            return "linear"
    return "categorical"


def _base(kind, ax):
    return {"type": kind, "title": _text(ax.get_title()), "elements": []}


def _planar(kind, ax):
    c = _base(kind, ax)
    c["x_label"], c["y_label"] = _text(ax.get_xlabel()), _text(ax.get_ylabel())
    c["x_unit"], c["y_unit"] = _unit(c["x_label"]), _unit(c["y_label"])
    return c


def _swap_axes(c):
    c["x_label"], c["y_label"] = c["y_label"], c["x_label"]
    c["x_unit"], c["y_unit"] = c["y_unit"], c["x_unit"]


def _points_chart(kind, ax):
    c = _planar(kind, ax)
    for name, axis, scale in (("x", ax.xaxis, ax.get_xscale()), ("y", ax.yaxis, ax.get_yscale())):
        labels = [t.get_text() for t in axis.get_ticklabels()]
        ticks = _ticks(axis, list(axis.get_ticklocs()))
        c[name + "_ticks"], c[name + "_tick_labels"] = ticks, labels
        c[name + "_scale"] = _scale(axis, scale, ticks, labels)
    return c


def _is_grid_line(line):
    """A straight two-point horizontal or vertical line (axhline & co)."""
    x, y = line.get_xdata(), line.get_ydata()
    return len(x) == 2 and len(y) == 2 and (x[0] == x[1] or y[0] == y[1])


def _line(ax):
    c = _points_chart("line", ax)
    for line in ax.get_lines():
        if _is_grid_line(line):
            continue
        label = line.get_label()
        if label.startswith("_child"):
            label = "Line " + label[len("_child"):]
        c["elements"].append({"label": label, "points": _points(line.get_xdata(), line.get_ydata())})
    return c


def _scatter(ax):
    c = _points_chart("scatter", ax)
    for coll in ax.collections:
        offsets = coll.get_offsets()
        c["elements"].append({"label": coll.get_label(), "points": _points(offsets[:, 0], offsets[:, 1])})
    return c


def _bar(ax):
    c = _planar("bar", ax)
    for cont in ax.containers:
        group = cont.get_label() or ""
        if group.startswith("_container"):
            group = "Group " + group[len("_container"):]
        heights = [r.get_height() for r in cont]
        if all(h == heights[0] for h in heights):  # barh: values are widths
            _swap_axes(c)
            labels = [t.get_text() for t in ax.get_yticklabels()]
            values = [r.get_width() for r in cont]
        else:
            labels = [t.get_text() for t in ax.get_xticklabels()]
            values = heights
        for label, value in zip(labels, values):
            c["elements"].append({"label": label, "group": group, "value": float(value)})
    return c


def _pie(ax):
    c = _base("pie", ax)
    for w in ax.patches:
        angle = abs(_round(decimal.Decimal(w.theta2) - decimal.Decimal(w.theta1)))
        c["elements"].append({"label": w.get_label(), "angle": angle, "radius": float(w.r)})
    return c


def _vertical(patches):
    """Whether boxes stand upright: their widths agree and their heights
    do not (when both agree: the first is taller than wide)."""
    spans = [(_round(max(v[:, 0]) - min(v[:, 0])), _round(max(v[:, 1]) - min(v[:, 1])))
             for v in (p.get_path().vertices for p in patches)]
    widths, heights = {w for w, _ in spans}, {h for _, h in spans}
    if len(widths) == 1 and len(heights) == 1:
        return spans[0][1] >= spans[0][0]
    return len(heights) > 1


def _boxes(ax, vertical):
    """Each box patch as {label, lo, hi, left, right}: its value range
    (quartiles) and its extent along the category axis."""
    ticks = ax.get_xticklabels() if vertical else ax.get_yticklabels()
    labels = [t.get_text() for t in ticks]
    out = []
    for label, patch in zip(labels, ax.patches):
        v = patch.get_path().vertices
        pos, val = (v[:, 0], v[:, 1]) if vertical else (v[:, 1], v[:, 0])
        pos, val = [_round(p) for p in pos], [_round(p) for p in val]
        out.append({"label": label, "lo": min(val), "hi": max(val),
                    "left": min(pos), "right": max(pos), "outliers": []})
    return out


def _near(a, b):
    return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))


def _attach(box, pos, val, line):
    """Reads one of the box's lines: whisker, median or fliers."""
    if line.get_linestyle() in ("None", "none", "", " "):  # fliers
        box["outliers"].extend(val)
    elif len(pos) == 2 and _near(pos[0], pos[1]):  # a whisker
        lo, hi = min(val), max(val)
        if _near(hi, box["lo"]):
            box["min"] = lo
        elif _near(lo, box["hi"]):
            box["max"] = hi
    elif (len(val) == 2 and _near(val[0], val[1]) and box["lo"] <= val[0] <= box["hi"]
          and _near(min(pos), box["left"]) and _near(max(pos), box["right"])):
        box["median"] = val[0]  # spans the box; a cap is narrower


def _box_and_whisker(ax):
    c = _planar("box_and_whisker", ax)
    vertical = _vertical(ax.patches)
    if not vertical:
        _swap_axes(c)
    boxes = _boxes(ax, vertical)
    for line in ax.lines:
        x, y = [_round(v) for v in line.get_xdata()], [_round(v) for v in line.get_ydata()]
        pos, val = (x, y) if vertical else (y, x)
        for box in boxes:
            if pos and all(box["left"] <= p <= box["right"] for p in pos):
                _attach(box, pos, val, line)
                break
    c["elements"] = [{
        "label": b["label"], "min": b.get("min", b["lo"]), "first_quartile": b["lo"],
        "median": b.get("median", b["lo"]), "third_quartile": b["hi"],
        "max": b.get("max", b["hi"]), "outliers": b["outliers"],
    } for b in boxes]
    return c


def _artists(ax):
    kids = getattr(ax, "_children", None)
    if kids is None:
        kids = list(ax.lines) + list(ax.patches) + list(ax.collections)
    from matplotlib.text import Text
    return [a for a in kids if not isinstance(a, Text)]


def _kind(ax):
    """The chart type of an Axes by the kinds of artists in it."""
    from matplotlib.collections import PathCollection
    from matplotlib.lines import Line2D
    from matplotlib.patches import PathPatch, Rectangle, Wedge
    arts = _artists(ax)
    if all(isinstance(a, Line2D) for a in arts):
        return "line"
    if all(isinstance(a, (PathPatch, Line2D)) for a in arts):
        return "box_and_whisker"
    arts = [a for a in arts if not (isinstance(a, Line2D) and _is_grid_line(a))]
    for kind, cls in (("scatter", PathCollection), ("pie", Wedge), ("bar", Rectangle)):
        if all(isinstance(a, cls) for a in arts):
            return kind
    return "unknown"


_BY_KIND = {"line": _line, "scatter": _scatter, "bar": _bar, "pie": _pie,
            "box_and_whisker": _box_and_whisker}


def axes_chart(ax):
    kind = _kind(ax)
    return _BY_KIND[kind](ax) if kind in _BY_KIND else _base(kind, ax)


def _json(v):
    """v as plain JSON: NaN and infinities as None, anything else unknown
    as its string."""
    if type(v) is _Clean:
        return v
    if isinstance(v, dict):
        return {str(k): _json(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_json(x) for x in v]
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if v is None or isinstance(v, (bool, int, str)):
        return v
    v = _plain(v)
    return _json(v) if isinstance(v, (float, int, bool)) else str(v)


def figure_chart(fig):
    """The e2b/chart of a Figure as plain JSON; None when it has no Axes."""
    axes = fig.get_axes()
    if not axes:
        return None
    if len(axes) == 1:
        return _json(axes_chart(axes[0]))
    sup = getattr(fig, "_suptitle", None)
    return _json({"type": "superchart", "title": sup.get_text() if sup is not None else "",
                  "elements": [axes_chart(ax) for ax in axes]})
