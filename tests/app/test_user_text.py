"""User text (file names, patient ids, code names) is never rendered as Markdown (issue 11, defect 5)."""
from __future__ import annotations

from app_helpers import PAGES, assert_clean, go, open_page

from favmac.ui.text import md

LINK = "[click me](https://x)"
BOLD = "__import__"
WIDE = (
    f"patient_id,prob_{BOLD},label_{BOLD},prob_B,label_B\n".encode()
    + b"".join(f"{LINK if i == 50 else f'P{i:03d}'},{(i % 10) / 10},{i % 2},{(i % 7) / 7:.4f},{(i // 2) % 2}\n".encode() for i in range(60))
)
NAME = f"{BOLD} {LINK}.csv"


def markdown_sources(at) -> list[str]:
    """The Markdown source of every element Streamlit renders as Markdown."""
    out = []
    for kind in ("markdown", "caption", "error", "warning", "info", "success", "title", "header", "subheader"):
        out += [str(e.value) for e in at.get(kind)]
    out += [str(e.label) for e in at.metric]
    return out


def test_md_escapes_links_and_emphasis():
    assert md(LINK) == "\\[click me\\](https\\:\u2060//x)"  # U+2060: GFM finds literal autolinks after escapes
    assert md("http://127.0.0.1:5/x www.a.b a@b.com") == "http\\:\u2060//127.0.0.1\\:5/x www\u2060\\.a.b a@\u2060b.com"
    assert md("1. not a list") == r"1\. not a list" and md("# not a heading") == r"\# not a heading"
    assert md(BOLD) == r"\_\_import\_\_"
    assert md("a\nb") == "a b"


def test_file_names_ids_and_codes_are_escaped_on_every_page():
    at = open_page("data")
    at.file_uploader(key="upload_wide").set_value((NAME, WIDE, "text/csv"))
    at.run()
    assert at.session_state["dataset"].name == NAME
    for page in PAGES:
        go(at, page)
        assert not at.exception, (page, [e.value for e in at.exception])
        if page == "patients":
            at.selectbox(key="patient_select").set_value(LINK).run()
        sources = markdown_sources(at)
        assert any(md(NAME) in s for s in sources + [c.value for c in at.sidebar.caption]) or page not in ("home", "data"), page
        for s in sources + [c.value for c in at.sidebar.caption]:
            assert LINK not in s and BOLD not in s, (page, s)
    assert any(md(LINK) in s for s in markdown_sources(at))  # the Patients caption names the patient
    # a DataError quoting a cell: the cell is escaped too
    go(at, "data")
    at.file_uploader(key="upload_wide").set_value(("bad.csv", WIDE.replace(b",0.5,", b",**0.5**,", 1), "text/csv"))
    at.run()
    errors = [e.value for e in at.error]
    assert errors and all("**0.5**" not in e for e in errors) and any(r"\*\*0.5\*\*" in e for e in errors), errors


# --------------------------------------------------------------------------- segment values (issue 21)

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from app_helpers import settle_jobs  # noqa: E402

from favmac.ui.text import md_frame, plain_html, show_bidi  # noqa: E402

IMAGE = "![x](http://host/y)"
ANCHOR = "<a href='http://host/'>link</a>"
HOSTILE = [IMAGE, ANCHOR, '<script>alert("x")</script>', "&quot;q&quot; `tick` $math$", "West\u202eTSAE", "*em* __b__ | pipe"]
SEGMENTS = HOSTILE[:4]  # four segments; 150 patients each


def test_md_and_plain_html_show_hostile_strings_literally():
    assert md(IMAGE) == "!\\[x\\](http\\:\u2060//host/y)"  # no image: the brackets are escaped
    assert md(ANCHOR) == "\\<a href='http\\:\u2060//host/'>link\\</a>"  # "<" escaped: no tag; U+2060: no autolink
    assert md("`tick` $math$ *a* |b|") == r"\`tick\` \$math\$ \*a\* \|b\|"
    assert md("&quot;") == "&quot;"  # an entity is text in Markdown here: Streamlit does not render raw HTML
    assert plain_html(ANCHOR) == "&lt;a href='http://host/'&gt;link&lt;/a&gt;"
    assert plain_html('<script>alert("x")</script>') == '&lt;script&gt;alert("x")&lt;/script&gt;'  # no &quot;
    assert plain_html("&quot; $math$") == "&amp;quot; &#36;math&#36;"  # shown as typed, never LaTeX
    for text in HOSTILE:  # nothing active survives
        assert "<" not in plain_html(text) and "$" not in plain_html(text)


@pytest.mark.parametrize("char", ["\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069",
                                  "\u200e", "\u200f", "\u061c"])
def test_direction_controls_become_visible_markers(char):
    marker = f"[U+{ord(char):04X}]"
    assert show_bidi(f"A{char}B") == f"A{marker}B"
    assert md(f"A{char}B") == f"A\\{marker[:-1]}\\]B" and char not in md(f"A{char}B")
    assert plain_html(f"A{char}B") == f"A{marker}B"


def test_md_frame_escapes_cells_index_and_keeps_numbers():
    frame = pd.DataFrame({"segment": HOSTILE[:3], "patients": [1, 2, 3], "mean": [0.5, np.nan, 1.0]}).set_index("segment")
    out = md_frame(frame)
    assert list(out.index) == [md(s) for s in HOSTILE[:3]]
    assert out["patients"].tolist() == [1, 2, 3] and out["mean"].iloc[0] == 0.5 and np.isnan(out["mean"].iloc[1])


def hostile_segment_session():
    """A wide upload whose segment column holds hostile text, segments on (Value & cost applied)."""
    rng = np.random.RandomState(7)
    n = 600
    probs = rng.beta(1.2, 2.0, size=(n, 3)).round(3)
    labels = (rng.rand(n, 3) < probs).astype(int)
    frame = pd.DataFrame({"patient_id": [f"P{i:04d}" for i in range(n)]})
    for k, code in enumerate(("A", "B", "C")):
        frame[f"prob_{code}"], frame[f"label_{code}"] = probs[:, k], labels[:, k]
    frame["segment"] = [SEGMENTS[i % len(SEGMENTS)] for i in range(n)]
    at = open_page("data")
    at.file_uploader(key="upload_wide").set_value(("hostile.csv", frame.to_csv(index=False).encode(), "text/csv"))
    at.run()
    assert_clean(at)
    go(at, "value_cost")
    at.checkbox(key="use_segments").check()
    at.button(key="apply_settings").click().run()
    assert_clean(at)
    assert at.session_state["settings"]["segment"] == "segment"
    return at


def static_table_sources(at) -> list[str]:
    out = []
    for table in at.table:
        value = table.value
        out += [str(i) for i in value.index] + [str(c) for c in value.columns]
        out += [str(v) for column in value.columns for v in value[column]]
    return out


def assert_literal(sources, where):
    joined = "\n".join(sources)
    for text in SEGMENTS:
        assert text not in joined, (where, text)
    assert any(md(text) in s for text in SEGMENTS for s in sources), where  # shown, escaped


def test_hostile_segment_values_are_literal_on_every_surface():
    at = hostile_segment_session()
    # Value & cost: the per-segment table (st.table renders Markdown in its cells and index)
    assert_literal(static_table_sources(at), "value & cost table")
    # Online session: the per-segment legend (plotly renders HTML in trace names)
    at = settle_jobs(go(at, "online"))  # the replay runs in the background
    at.button(key="to_end").click().run()
    assert_clean(at)
    chart = next(c for c in at.get("plotly_chart") if "per segment" in c.proto.spec)
    import json
    names = [trace.get("name") for trace in json.loads(chart.proto.spec)["data"]]
    names = [n for n in names if n and not n.startswith(("Target: ", "δ = "))]  # the dashed line's legend entry
    assert sorted(names) == sorted(plain_html(s) for s in SEGMENTS)
    assert all("<" not in n and "$" not in n for n in names if n)
    # Patients: the caption and the threshold tile's help name the patient's segment
    go(at, "patients")
    assert_clean(at)
    captions = [c.value for c in at.caption]
    assert any("segment" in c for c in captions)
    assert_literal(captions + [m.help or "" for m in at.metric], "patients caption")
    # Validity: the verdict and the per-segment table
    go(at, "validity")
    at = settle_jobs(at.button(key="run_validity").click().run())
    assert not at.exception, [e.value for e in at.exception]
    sources = static_table_sources(at) + [e.value for e in at.success] + [e.value for e in at.error]
    assert_literal(sources, "validity")
