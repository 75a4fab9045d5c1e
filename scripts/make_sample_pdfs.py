#!/usr/bin/env python3
"""Render the sample policy reports (Korean markdown) into PDF files.

Sources : core/samples/policy_src/*.md
Outputs : core/samples/japan_ict_policy.pdf, core/samples/usa_ict_policy.pdf

Requirements:
    pip install fpdf2 pypdf
    apt-get install -y fonts-nanum        # provides the Korean TTF font below

Usage:
    python scripts/make_sample_pdfs.py            # build both PDFs
    python scripts/make_sample_pdfs.py --check    # build, then print the first
                                                  # 200 extracted chars per page

The markdown dialect understood here is deliberately small:
    # Title                  -> large title on page 1 (also the PDF /Title)
    : text                   -> subtitle / byline lines right under the title
    > text                   -> shaded note box (disclaimer)
    ## Heading / ### Heading -> section / subsection headings
    - item                   -> bullet list item
    | a | b |                -> simple table (second row must be | --- | ... |)
    <!-- pagebreak -->       -> explicit page break
    anything else            -> paragraph text (consecutive lines are joined)

Output is deterministic (fixed creation date), so re-running the script does
not change the PDFs unless the sources or the font change.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

# --- Font configuration -----------------------------------------------------
# Any Korean TrueType font works. The defaults come from Debian's fonts-nanum
# package. They can be overridden with the KOREAN_FONT_PATH /
# KOREAN_FONT_BOLD_PATH environment variables.
FONT_PATH = Path(
    os.environ.get("KOREAN_FONT_PATH", "/usr/share/fonts/truetype/nanum/NanumGothic.ttf")
)
FONT_BOLD_PATH = Path(
    os.environ.get(
        "KOREAN_FONT_BOLD_PATH", "/usr/share/fonts/truetype/nanum/NanumGothicBold.ttf"
    )
)
FONT_FAMILY = "KoreanSans"

ROOT = Path(__file__).resolve().parent.parent
SAMPLES_DIR = ROOT / "core" / "samples"
SRC_DIR = SAMPLES_DIR / "policy_src"

MIN_PAGES = 4
MAX_PAGES = 6
# Fixed date so that regenerated PDFs are byte-for-byte reproducible.
CREATION_DATE = datetime(2025, 9, 1, 9, 0, 0, tzinfo=UTC)


@dataclass(frozen=True)
class Report:
    source: Path
    output: Path
    subject: str


REPORTS = [
    Report(
        SRC_DIR / "japan_ict_policy.md",
        SAMPLES_DIR / "japan_ict_policy.pdf",
        "일본 ICT 정책 동향 (샘플 보고서)",
    ),
    Report(
        SRC_DIR / "usa_ict_policy.md",
        SAMPLES_DIR / "usa_ict_policy.pdf",
        "미국 ICT 정책 동향 (샘플 보고서)",
    ),
]

PAGEBREAK = "<!-- pagebreak -->"

# Layout (millimetres / points)
MARGIN = 20
BODY_SIZE = 10.5
BODY_LH = 6.1  # line height for body text


def _import_fpdf():
    try:
        from fpdf import FPDF  # noqa: F401  (fpdf2 installs the "fpdf" package)
    except ImportError:  # pragma: no cover - depends on the environment
        sys.exit("fpdf2 is not installed. Run: pip install fpdf2")
    from fpdf import FPDF

    return FPDF


# fontTools (used by fpdf2 to subset the font) logs harmless notes about
# hinting tables it drops; keep the output readable.
logging.getLogger("fontTools.subset").setLevel(logging.ERROR)


def check_fonts() -> tuple[Path, Path]:
    if not FONT_PATH.is_file():
        sys.exit(
            f"Korean font not found: {FONT_PATH}\n"
            "Install it with:  apt-get update && apt-get install -y fonts-nanum\n"
            "or point KOREAN_FONT_PATH (and optionally KOREAN_FONT_BOLD_PATH) "
            "at another Korean TrueType file (e.g. /usr/share/fonts/truetype/unfonts-core/"
            "UnDotum.ttf from fonts-unfonts-core)."
        )
    bold = FONT_BOLD_PATH if FONT_BOLD_PATH.is_file() else FONT_PATH
    return FONT_PATH, bold


# --- Markdown parsing ---------------------------------------------------------


def parse_blocks(text: str) -> list[tuple[str, object]]:
    """Turn the small markdown dialect into a list of (kind, payload) blocks."""
    blocks: list[tuple[str, object]] = []
    para: list[str] = []
    table: list[str] = []

    def flush_para():
        if para:
            blocks.append(("para", " ".join(s.strip() for s in para)))
            para.clear()

    def flush_table():
        if table:
            rows = []
            for i, line in enumerate(table):
                cells = [c.strip() for c in line.strip().strip("|").split("|")]
                if i == 1 and all(set(c) <= set("-: ") for c in cells):
                    continue  # separator row
                rows.append(cells)
            blocks.append(("table", rows))
            table.clear()

    for raw in text.splitlines():
        line = raw.rstrip()
        stripped = line.strip()
        if stripped.startswith("|"):
            flush_para()
            table.append(stripped)
            continue
        flush_table()
        if not stripped:
            flush_para()
        elif stripped == PAGEBREAK:
            flush_para()
            blocks.append(("pagebreak", None))
        elif stripped.startswith("### "):
            flush_para()
            blocks.append(("h3", stripped[4:].strip()))
        elif stripped.startswith("## "):
            flush_para()
            blocks.append(("h2", stripped[3:].strip()))
        elif stripped.startswith("# "):
            flush_para()
            blocks.append(("title", stripped[2:].strip()))
        elif stripped.startswith(": "):
            flush_para()
            blocks.append(("subtitle", stripped[2:].strip()))
        elif stripped.startswith("> "):
            flush_para()
            blocks.append(("note", stripped[2:].strip()))
        elif stripped.startswith("- "):
            flush_para()
            blocks.append(("bullet", stripped[2:].strip()))
        else:
            para.append(stripped)
    flush_para()
    flush_table()
    return blocks


# --- Rendering ---------------------------------------------------------------


def build_pdf(report: Report) -> int:
    """Render one report; returns its page count."""
    FPDF = _import_fpdf()
    from fpdf.enums import XPos, YPos

    regular, bold = check_fonts()
    blocks = parse_blocks(report.source.read_text(encoding="utf-8"))
    titles = [b[1] for b in blocks if b[0] == "title"]
    if not titles:
        sys.exit(f"{report.source}: missing '# Title' line")
    title = str(titles[0])

    class ReportPDF(FPDF):
        def header(self):
            if self.page_no() == 1:
                return
            self.set_font(FONT_FAMILY, "", 8)
            self.set_text_color(120, 120, 120)
            self.cell(0, 5, title, align="R", new_x=XPos.LMARGIN, new_y=YPos.NEXT)
            self.set_draw_color(200, 200, 200)
            self.line(MARGIN, self.get_y(), self.w - MARGIN, self.get_y())
            self.ln(4)
            self.set_text_color(0, 0, 0)

        def footer(self):
            self.set_y(-14)
            self.set_font(FONT_FAMILY, "", 8)
            self.set_text_color(120, 120, 120)
            self.cell(0, 5, f"- {self.page_no()} / {{nb}} -", align="C")
            self.set_text_color(0, 0, 0)

    pdf = ReportPDF(format="A4", unit="mm")
    pdf.set_margins(MARGIN, MARGIN, MARGIN)
    pdf.set_auto_page_break(auto=True, margin=20)
    pdf.add_font(FONT_FAMILY, "", str(regular))
    pdf.add_font(FONT_FAMILY, "B", str(bold))
    pdf.set_title(title)
    pdf.set_subject(report.subject)
    pdf.set_author("Agentic RAG Studio - sample corpus")
    pdf.set_keywords("ICT 정책, 샘플, Agentic RAG Studio")
    pdf.set_creator("scripts/make_sample_pdfs.py (fpdf2)")
    pdf.set_lang("ko")
    pdf.set_creation_date(CREATION_DATE)
    pdf.alias_nb_pages()
    pdf.add_page()

    width = pdf.w - 2 * MARGIN

    def ensure_space(mm: float):
        if pdf.get_y() + mm > pdf.page_break_trigger:
            pdf.add_page()

    slack: list[float] = []  # free space (mm) left on a page at each explicit break
    for kind, payload in blocks:
        if kind == "pagebreak":
            slack.append(pdf.page_break_trigger - pdf.get_y())
            pdf.add_page()
        elif kind == "title":
            pdf.ln(8)
            pdf.set_font(FONT_FAMILY, "B", 22)
            pdf.multi_cell(width, 11, str(payload), align="C")
            pdf.ln(3)
            pdf.set_draw_color(40, 70, 130)
            pdf.set_line_width(0.6)
            pdf.line(MARGIN + 30, pdf.get_y(), pdf.w - MARGIN - 30, pdf.get_y())
            pdf.set_line_width(0.2)
            pdf.ln(5)
        elif kind == "subtitle":
            pdf.set_font(FONT_FAMILY, "", 10.5)
            pdf.set_text_color(70, 70, 70)
            pdf.multi_cell(width, 6, str(payload), align="C")
            pdf.set_text_color(0, 0, 0)
            pdf.ln(1)
        elif kind == "note":
            pdf.ln(3)
            pdf.set_font(FONT_FAMILY, "", 9)
            pdf.set_fill_color(240, 242, 246)
            pdf.set_draw_color(190, 195, 205)
            pdf.multi_cell(width, 5.2, str(payload), border=1, fill=True, padding=3)
            pdf.ln(4)
        elif kind == "h2":
            ensure_space(30)
            pdf.ln(3)
            pdf.set_font(FONT_FAMILY, "B", 14)
            pdf.set_text_color(25, 55, 115)
            pdf.multi_cell(width, 8, str(payload))
            pdf.set_text_color(0, 0, 0)
            pdf.ln(1.5)
        elif kind == "h3":
            ensure_space(22)
            pdf.ln(1)
            pdf.set_font(FONT_FAMILY, "B", 11.5)
            pdf.multi_cell(width, 7, str(payload))
            pdf.ln(0.5)
        elif kind == "para":
            pdf.set_font(FONT_FAMILY, "", BODY_SIZE)
            pdf.multi_cell(width, BODY_LH, str(payload), align="L")
            pdf.ln(2.5)
        elif kind == "bullet":
            pdf.set_font(FONT_FAMILY, "", BODY_SIZE)
            ensure_space(BODY_LH)
            pdf.set_x(MARGIN + 3)
            pdf.cell(4, BODY_LH, "•")
            pdf.multi_cell(width - 7, BODY_LH, str(payload), align="L")
            pdf.ln(1)
        elif kind == "table":
            rows = payload  # type: ignore[assignment]
            pdf.set_font(FONT_FAMILY, "", 9)
            pdf.set_draw_color(170, 170, 170)
            ncols = len(rows[0])
            col_widths = (38, 62, 40) if ncols == 3 else None
            if ncols == 4:
                col_widths = (50, 30, 35, 45)
            with pdf.table(
                col_widths=col_widths,
                line_height=5.6,
                text_align="LEFT",
                padding=1.5,
                headings_style=_heading_style(),
            ) as table:
                for row in rows:
                    r = table.row()
                    for cell in row:
                        r.cell(cell)
            pdf.ln(4)
        else:  # pragma: no cover
            raise ValueError(kind)

    slack.append(pdf.page_break_trigger - pdf.get_y())
    report.output.parent.mkdir(parents=True, exist_ok=True)
    pdf.output(str(report.output))
    explicit_pages = sum(1 for kind, _ in blocks if kind == "pagebreak") + 1
    if pdf.page_no() != explicit_pages:
        print(
            f"warning: {report.output.name}: content overflowed; {pdf.page_no()} pages "
            f"instead of the {explicit_pages} set by page breaks",
            file=sys.stderr,
        )
    else:
        print(f"   free space per page (mm): {', '.join(f'{s:.0f}' for s in slack)}")
    return pdf.page_no()


def _heading_style():
    from fpdf.fonts import FontFace

    return FontFace(family=FONT_FAMILY, emphasis="BOLD", fill_color=(225, 232, 245))


def check_pdf(path: Path) -> None:
    try:
        from pypdf import PdfReader
    except ImportError:  # pragma: no cover
        sys.exit("pypdf is not installed. Run: pip install pypdf")
    reader = PdfReader(str(path))
    print(f"== {path.name}: {len(reader.pages)} pages, title={reader.metadata.title!r}")
    for i, page in enumerate(reader.pages, 1):
        text = " ".join((page.extract_text() or "").split())
        print(f"-- page {i} ({len(text)} chars): {text[:200]}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--check", action="store_true", help="extract text back with pypdf and print it"
    )
    args = parser.parse_args(argv)

    for report in REPORTS:
        pages = build_pdf(report)
        size_kb = report.output.stat().st_size / 1024
        print(f"wrote {report.output.relative_to(ROOT)}: {pages} pages, {size_kb:.0f} KiB")
        if not MIN_PAGES <= pages <= MAX_PAGES:
            print(
                f"error: {report.output.name} has {pages} pages; "
                f"expected {MIN_PAGES}-{MAX_PAGES}. Adjust the source or page breaks.",
                file=sys.stderr,
            )
            return 1
        if args.check:
            check_pdf(report.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
