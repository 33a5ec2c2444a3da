#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""gen-man.py -- pmrep's man pages, generated from the public headers.

The header comments are the single source of the section-3 pages: every
function declared `PMREP_API ... name(...);` in include/pmrep/*.h gets
man3/name.3, made from the comment right before its declaration, which
must begin ` * name -- summary` (or `/* name -- summary`). pmrep(7) is made
from docs/man/pmrep.7.md and the headers' top comments, section titles,
group comments and type comments; pmrep(1) and pmrep-target(8) from their
docs/man/*.md sources (a small markdown subset, see md_to_roff).

Usage:
  gen-man.py --out DIR [--version V] [--docs DIR] HEADER...
      write DIR/man3/*.3, DIR/man7/pmrep.7 and the tools' pages; stale
      pages in DIR/man3 are removed
  gen-man.py --list HEADER...
      print each function, its group comment (if any) and its summary

Exits 1, naming each function, when an exported function has no doc
comment in the recognised structure (no silent gaps): no comment right
before the declaration, a comment that does not begin `name -- `, one
that names another function, or an empty summary.

How a header is read (line by line, no C parser):
- comment: a `/* ... */` that begins a line; code: any other line;
  declaration: from a line starting `PMREP_API` to the first `;`.
- the first comment after the SPDX line is the header's top comment (a
  one-line "Past ~800 lines: ..." comment, why the file is long, is skipped)
  (its "Conventions" and "Thread safety:" paragraphs apply to every
  function of the header; a top comment that says "The conventions of
  <pmrep/x.h> apply" and has none of its own takes x's);
- `/* ---- title */` is a section separator;
- the comment ending on the line right before a declaration is that
  function's own comment;
- a group comment is any other comment on lines of its own that is
  followed by a blank line, or directly by a function's own comment, or
  (more than one paragraph) by #define lines and then a blank line. It
  applies to the functions after it, until the next separator or group
  comment, and ends early at the first function whose own comment is of
  the other form (one line vs several) than the group's first function's;
- every other comment documents the code after it (types, macros): it is
  listed with that code in pmrep(7).
"""
import argparse
import os
import re
import sys

ABBREV = ("e.g", "i.e", "etc", "vs", "cf")
# characters groff may not know on every device
ASCII_FOR = {"\u2016": "||", "\u2026": "...", "\u2013": "\\(en", "\u2014": "\\(em"}


# ------------------------------------------------------------------ parsing

class Comment:
    def __init__(self, start, end, raw):
        self.start, self.end = start, end      # 0-based line numbers
        self.raw = raw
        self.one_line = start == end
        self.lines = comment_lines(raw)


class Decl:
    def __init__(self, start, end, text):
        self.start, self.end = start, end
        self.text = text
        proto = re.sub(r"\s+", " ", text).strip()
        proto = re.sub(r"^PMREP_API\s+", "", proto).rstrip(";").strip()
        proto = re.sub(r"\(\s+", "(", proto)
        proto = re.sub(r"\s+\)", ")", proto)
        self.proto = proto
        m = re.search(r"(\w+)\s*\(", proto)
        self.name = m.group(1) if m else None


def comment_lines(raw):
    """The text of a comment, one entry per line, without /* * */."""
    lines = raw.split("\n")
    out = []
    for i, l in enumerate(lines):
        if i == 0:
            l = re.sub(r"^\s*/\*", "", l)
            if l.startswith(" "):
                l = l[1:]
        else:
            l = re.sub(r"^\s*\*(?!/)", "", l)
            if l.startswith(" "):
                l = l[1:]
        if i == len(lines) - 1:
            l = re.sub(r"\s*\*/\s*$", "", l)
        out.append(l.rstrip())
    while out and out[0].strip() == "":
        out.pop(0)
    while out and out[-1].strip() == "":
        out.pop()
    return out


def included_by(top, name, seen=None):
    """The public headers <name> (under top) includes, directly or through
    the public headers it includes: a set of "pmrep/x.h"."""
    seen = set() if seen is None else seen
    try:
        src = open(os.path.join(top, name), encoding="utf-8").read()
    except OSError:
        return seen
    for inc in re.findall(r"^\s*#\s*include\s*<(pmrep/\w+\.h)>", src, re.M):
        if inc not in seen:
            seen.add(inc)
            included_by(top, inc, seen)
    return seen


class Header:
    def __init__(self, path):
        self.path = path
        self.name = "pmrep/" + os.path.basename(path)
        self.src = open(path, encoding="utf-8").read()
        self.lines = self.src.split("\n")
        self.items = []          # Comment, Decl, ("code", line, text), ("sep", line, title)
        # does <pmrep.h> (include/pmrep.h, next to include/pmrep/) include
        # it, itself or through the public headers it includes?
        top = os.path.dirname(os.path.dirname(os.path.abspath(path)))
        umbrella = os.path.join(top, "pmrep.h")
        if os.path.exists(umbrella):
            self.in_umbrella = self.name in included_by(top, "pmrep.h")
        else:
            self.in_umbrella = True
        self.scan()

    def scan(self):
        L = self.lines
        i = 0
        while i < len(L):
            line = L[i]
            s = line.strip()
            if s.startswith("/*"):
                j = i
                while "*/" not in L[j][L[j].find("/*") + 2 if j == i else 0:]:
                    j += 1
                raw = "\n".join(L[i:j + 1])
                after = L[j][L[j].find("*/") + 2:].strip()
                m = re.match(r"^/\*\s*-{5,}\s*(.*?)\s*\*/$", s)
                if m and i == j:
                    self.items.append(("sep", i, m.group(1)))
                elif after:
                    self.items.append(("code", i, "\n".join(L[i:j + 1])))
                else:
                    self.items.append(Comment(i, j, raw))
                i = j + 1
                continue
            if s.startswith("PMREP_API") and not s.startswith("PMREP_API __"):
                j = i
                while ";" not in L[j]:
                    j += 1
                self.items.append(Decl(i, j, "\n".join(L[i:j + 1])))
                i = j + 1
                continue
            if s.startswith("#define PMREP_API") or s == "":
                self.items.append(("blank" if s == "" else "code", i, line))
                i += 1
                continue
            self.items.append(("code", i, line))
            i += 1

    def kind(self, it):
        if isinstance(it, Comment):
            return "comment"
        if isinstance(it, Decl):
            return "decl"
        return it[0]


def is_func_comment(items, k):
    """items[k] is a Comment: is it a function's own comment?"""
    return (k + 1 < len(items) and isinstance(items[k + 1], Decl)
            and items[k + 1].start == items[k].end + 1)


def paragraphs_of(lines):
    out, cur = [], []
    for l in lines:
        if l.strip() == "":
            if cur:
                out.append(cur)
            cur = []
        else:
            cur.append(l)
    if cur:
        out.append(cur)
    return out


def classify(h):
    """Functions (with own comment, group), top comment, sections, type docs."""
    items = h.items
    errors = []
    funcs = []
    top = None
    section = ""
    group = None            # dict(comment, style, members, section)
    groups = []
    outline = []            # for pmrep(7): ("sec", title) ("group", g) ("type", comment, code) ("func", f)
    seen_spdx = False
    for k, it in enumerate(items):
        kind = h.kind(it)
        if kind == "sep":
            section = it[2]
            group = None
            outline.append(("sec", section))
            continue
        if kind == "comment":
            text0 = it.lines[0] if it.lines else ""
            if not seen_spdx and "SPDX-License-Identifier" in text0:
                seen_spdx = True
                continue
            if text0.lstrip("/* ").startswith("Past ~800 lines:"):
                continue    # why the header is long: not for the pages
            if top is None:
                top = it
                continue
            if is_func_comment(items, k):
                continue
            # what follows it?
            nxt = items[k + 1] if k + 1 < len(items) else None
            nk = h.kind(nxt) if nxt is not None else "blank"
            is_group = False
            if nk == "blank":
                is_group = True
            elif nk == "comment" and is_func_comment(items, k + 1) and \
                    nxt.start == it.end + 1:
                is_group = True
            elif nk == "code" and len(paragraphs_of(it.lines)) > 1:
                m = k + 1
                while m < len(items) and h.kind(items[m]) == "code" and \
                        items[m][2].lstrip().startswith("#define"):
                    m += 1
                if m > k + 1 and m < len(items) and h.kind(items[m]) == "blank":
                    is_group = True
            if is_group:
                group = {"comment": it, "style": None, "members": [],
                         "section": section}
                groups.append(group)
                outline.append(("group", group))
            else:
                # a type / macro comment: the code right after it
                code = []
                m = k + 1
                depth = 0
                while m < len(items):
                    km = h.kind(items[m])
                    if km == "code":
                        t = items[m][2]
                        code.append(t)
                        depth += t.count("{") - t.count("}")
                        m += 1
                        if depth <= 0 and (t.rstrip().endswith(";") or
                                           t.lstrip().startswith("#define")):
                            # a #define run continues; a declaration ends
                            if not t.lstrip().startswith("#define"):
                                break
                            if m < len(items) and h.kind(items[m]) == "code" \
                                    and items[m][2].lstrip().startswith("#define"):
                                continue
                            break
                        continue
                    if km == "comment" and depth > 0:
                        code.append(items[m].raw)
                        m += 1
                        continue
                    break
                outline.append(("type", it, "\n".join(code)))
            continue
        if kind == "decl":
            prev = items[k - 1] if k > 0 else None
            f = {"decl": it, "name": it.name, "header": h, "section": section,
                 "comment": None, "group": None}
            if isinstance(prev, Comment) and prev.end + 1 == it.start:
                f["comment"] = prev
            if f["comment"] is None:
                errors.append("%s:%d: %s: no doc comment right before its "
                              "declaration" % (h.path, it.start + 1, it.name))
            else:
                first = " ".join(f["comment"].lines)
                m = re.match(r"^(\w+)\s+--\s*(.*)$", first, re.S)
                if not m:
                    errors.append("%s:%d: %s: its comment does not begin "
                                  "'%s -- summary' (it begins '%s')" %
                                  (h.path, f["comment"].start + 1, it.name,
                                   it.name, first[:50]))
                elif m.group(1) != it.name:
                    errors.append("%s:%d: %s: its comment names %s" %
                                  (h.path, f["comment"].start + 1, it.name,
                                   m.group(1)))
            if group is not None and f["comment"] is not None:
                style = f["comment"].one_line
                if group["style"] is None:
                    group["style"] = style
                if group["style"] == style:
                    f["group"] = group
                    group["members"].append(f)
                else:
                    group = None
            funcs.append(f)
            outline.append(("func", f))
    return funcs, top, outline, errors


# ------------------------------------------------------- the comment's text

def blocks_of(par):
    """One paragraph -> blocks: ("text", str) ("list", [str]) ("lit", [str])."""
    blocks = []
    mode = None
    for l in par:
        if re.match(r"^\s*- ", l):
            if mode != "list":
                blocks.append(["list", []])
                mode = "list"
            blocks[-1][1].append(re.sub(r"^\s*- ", "", l).strip())
            continue
        if mode == "list" and l.startswith(" "):
            blocks[-1][1][-1] += " " + l.strip()
            continue
        if l.startswith("\t") or l.startswith("  "):
            if mode != "lit":
                blocks.append(["lit", []])
                mode = "lit"
            blocks[-1][1].append(l.expandtabs(8))
            continue
        if mode != "text":
            blocks.append(["text", ""])
            mode = "text"
        blocks[-1][1] = (blocks[-1][1] + " " + l.strip()).strip()
    return blocks


def split_sentences(text):
    """Sentences at a '.' outside parentheses, quotes and backticks."""
    out = []
    depth = 0
    inq = inb = False
    start = 0
    i = 0
    n = len(text)
    while i < n:
        c = text[i]
        if c == "`":
            inb = not inb
        elif inb:
            pass
        elif c == '"':
            inq = not inq
        elif inq:
            pass
        elif c == "(":
            depth += 1
        elif c == ")":
            depth = max(0, depth - 1)
        elif c == "." and depth == 0 and (i + 1 == n or text[i + 1] == " "):
            word = re.search(r"(\S+)$", text[start:i])
            w = word.group(1).lower() if word else ""
            if not any(w.endswith(a) for a in ABBREV) and not w.endswith(".."):
                out.append(text[start:i + 1].strip())
                start = i + 1
        i += 1
    if text[start:].strip():
        out.append(text[start:].strip())
    return out


def split_top(text, seps, lookahead=None):
    """Split at separators outside parentheses / quotes / backticks."""
    out = []
    depth = 0
    inq = inb = False
    start = 0
    for i, c in enumerate(text):
        if c == "`":
            inb = not inb
        elif inb:
            continue
        elif c == '"':
            inq = not inq
        elif inq:
            continue
        elif c == "(":
            depth += 1
        elif c == ")":
            depth = max(0, depth - 1)
        elif c in seps and depth == 0:
            if lookahead is None or re.match(lookahead, text[i + 1:]):
                out.append(text[start:i])
                start = i + 1
    out.append(text[start:])
    return out


ERR_START = re.compile(r"^(Common errors|Errors)\b[^:]*:\s*")
THREAD = re.compile(r"^(Not thread[- ]safe|Thread[- ]safe|Thread[- ]safety:|"
                    r"Thread safety:)")
FD_WORD = re.compile(r"\bfds?\b")
OWN_WORD = re.compile(r"\b(own|owns|owned|close|closes|closed)\b", re.I)
ERR_ITEM = r"\s*(PMREP_E_|those of|the errors of|the common ones|or a )"


def split_errors(body):
    items = []
    for part in split_top(body, ",;", ERR_ITEM):
        part = part.strip().rstrip(".").strip()
        part = re.sub(r"^(and|or) (?=PMREP_E_)", "", part)
        if part:
            items.append(part)
    return items


class Doc:
    """A comment split into the parts of a man page."""

    def __init__(self, lines, strip_name=None, is_fd_func=False):
        self.summary = ""
        self.desc = []          # list of paragraphs, each a list of blocks
        self.errors_intro = ""
        self.errors = []
        self.thread = []
        self.fd = []
        self.returns = []
        pars = paragraphs_of(lines)
        if strip_name and pars:
            first = pars[0][0]
            pars[0][0] = re.sub(r"^\w+\s+--\s*", "", first)
        for pi, par in enumerate(pars):
            blocks = blocks_of(par)
            outp = []
            bi = 0
            while bi < len(blocks):
                kind, val = blocks[bi]
                if kind != "text":
                    outp.append([kind, val])
                    bi += 1
                    continue
                keep = []
                sents = split_sentences(val)
                si = 0
                in_thread = False
                while si < len(sents):
                    s = sents[si]
                    if ERR_START.match(s):
                        in_thread = False
                        m = ERR_START.match(s)
                        head = s[:m.end()].strip()
                        body = s[m.end():]
                        if head not in ("Errors:", "Common errors:"):
                            self.errors_intro = head
                        # a clause ending in ':' introduces the list after it
                        if body.strip() == "" and si == len(sents) - 1 and \
                                bi + 1 < len(blocks) and blocks[bi + 1][0] == "list":
                            for it in blocks[bi + 1][1]:
                                self.errors.append(it.rstrip(";. "))
                            bi += 1
                        else:
                            self.errors.extend(split_errors(body))
                    elif THREAD.match(s) or in_thread and not \
                            re.match(r"^(Errors|Returns)\b", s):
                        self.thread.append(s)
                        in_thread = True
                    elif re.match(r"^Returns\b", s):
                        self.returns.append(s)
                        in_thread = False
                    else:
                        keep.append(s)
                        in_thread = False
                        if (FD_WORD.search(s) and OWN_WORD.search(s)) or \
                                (is_fd_func and re.search(r"\b[Oo]wned by\b", s)):
                            self.fd.append(s)
                    si += 1
                if keep:
                    outp.append(["text", " ".join(keep)])
                bi += 1
            if outp:
                self.desc.append(outp)
        if strip_name:
            if self.desc and self.desc[0] and self.desc[0][0][0] == "text":
                self.summary = summary_of(self.desc[0][0][1])


def summary_of(text):
    """The first clause: up to the first sentence end, ': ' or ';'."""
    first = split_sentences(text)[0]
    for sep in (": ", ";"):
        parts = split_top(first, sep[0], r"\s" if sep == ": " else None)
        # a short lead-in ("without waiting: ...") keeps what follows it
        if len(parts) > 1 and len(parts[0].split()) >= 3:
            first = parts[0]
    return first.strip().rstrip(".").strip()


# ---------------------------------------------------------------- roff out

def esc(s):
    """Escape plain text for roff (inline)."""
    s = s.replace("\\", "\\e")
    s = s.replace(" -- ", " \\(em ")
    s = s.replace("-", "\\-")
    out = []
    for ch in s:
        if ch in ASCII_FOR:
            out.append(ASCII_FOR[ch])
        elif ord(ch) > 126:
            out.append("\\[u%04X]" % ord(ch))
        else:
            out.append(ch)
    return "".join(out)


def fmt(s, names=()):
    """Plain comment text -> roff inline: `arg` italic, names bold."""
    pieces = re.split(r"(`[^`]*`)", s)
    out = []
    for p in pieces:
        if p.startswith("`") and p.endswith("`") and len(p) >= 2:
            inner = p[1:-1]
            if re.match(r"^\w+$", inner):
                out.append("\\fI" + esc(inner) + "\\fP")
            else:
                out.append("\\fB" + esc(inner) + "\\fP")
            continue
        t = esc(p)
        t = re.sub(r"\b(pmrep_\w+)(?=\(\))", r"\\fB\1\\fP", t)
        t = re.sub(r"(?<![\w\\])(pmrep_\w+)(?![\w(])",
                   lambda m: "\\fB" + m.group(1) + "\\fP"
                   if m.group(1) in names else m.group(1), t)
        t = re.sub(r"(?<![\w\\])(PMREP_[A-Z0-9_]+\*?|[A-Z][A-Z0-9]*_[A-Z0-9_]+)(?![\w])",
                   r"\\fB\1\\fP", t)
        out.append(t)
    return "".join(out)


def line(s):
    """A text line: never starting with a control character or a space."""
    s = s.lstrip()
    if s.startswith(".") or s.startswith("'"):
        s = "\\&" + s
    return s


def render_blocks(par, names, out):
    for kind, val in par:
        if kind == "text":
            out.append(".PP")
            out.append(line(fmt(val, names)))
        elif kind == "list":
            for it in val:
                out.append(".IP \\(bu 2")
                out.append(line(fmt(it, names)))
        elif kind == "lit":
            out.append(".PP")
            out.append(".nf")
            out.append(".RS 4")
            for l in val:
                out.append("\\&" + esc(l))
            out.append(".RE")
            out.append(".fi")


def render_pars(pars, names, out):
    first = True
    for par in pars:
        render_blocks(par, names, out)
        first = False
    return first


def synopsis(proto):
    """The prototype, wrapped at its commas, types bold and names italic."""
    m = re.match(r"^(.*?\b)(\w+)\((.*)\)$", proto)
    ret, name, params = m.group(1), m.group(2), m.group(3)
    plist = [p.strip() for p in split_top(params, ",")] if params.strip() else []
    head = ret + name + "("
    rendered = []
    for p in plist:
        pm = re.match(r"^(.*?)(\w+)((?:\[[^\]]*\])*)$", p)
        if p == "void" or not pm or not pm.group(1).strip():
            rendered.append(("\\fB" + esc(p) + "\\fP", len(p)))
        else:
            typ, nm, arr = pm.group(1), pm.group(2), pm.group(3)
            rendered.append(("\\fB" + esc(typ) + "\\fP\\fI" + esc(nm) +
                             "\\fP\\fB" + esc(arr) + "\\fP", len(p)))
    lines = []
    cur = "\\fB" + esc(head) + "\\fP"
    width = len(head)
    indent = " " * min(len(head), 24)
    for i, (r, n) in enumerate(rendered):
        tail = ", " if i + 1 < len(rendered) else ""
        piece_len = n + len(tail.rstrip())
        if width + piece_len > 72 and width > len(head):
            lines.append(cur.rstrip())
            cur = indent
            width = len(indent)
        cur += r + ("\\fB,\\fP " if tail else "")
        width += n + len(tail)
    cur += "\\fB);\\fP"
    lines.append(cur)
    return lines


def th(name, sec, version, date, manual):
    return '.TH "%s" %s "%s" "pmrep %s" "%s"' % (name, sec, date, version, manual)


def func_page(f, by_name, version, date, conventions, fd_conventions, types):
    name = f["name"]
    names = set(by_name)
    doc = Doc(f["comment"].lines, strip_name=True,
              is_fd_func=name.endswith("_fd"))
    if not doc.summary:
        return None, "%s:%d: %s: empty summary after '%s -- '" % (
            f["header"].path, f["comment"].start + 1, name, name)
    g = f["group"]
    gdoc = Doc(g["comment"].lines) if g else None
    out = ["'\\\" t", ".\\\" generated by scripts/gen-man.py from <%s>: edit the header's"
           " comment, not this page" % f["header"].name,
           th(name, 3, version, date, "pmrep Library Functions")]
    out += [".nh", ".ad l"]
    out += [".SH NAME", "%s \\- %s" % (name, esc(doc.summary.replace("`", "")))]
    out += [".SH SYNOPSIS", ".nf", ".B #include <pmrep.h>"]
    umbrella = f["header"].in_umbrella
    if not umbrella:
        out.append(".B #include <%s>" % f["header"].name)
    out.append(".PP")
    out += synopsis(f["decl"].proto)
    pc = "pmrep" if umbrella else "pmrep\\-%s" % (
        os.path.basename(f["header"].path)[:-2])
    out += [".fi", ".PP", "Link with \\fB\\-lpmrep\\fP "
            "(\\fBpkg\\-config \\-\\-cflags \\-\\-libs %s\\fP)." % pc]
    if not umbrella:
        out.append("<pmrep.h> does not include <%s>: include it too." % f["header"].name)
    out += [".SH DESCRIPTION"]
    pars = doc.desc
    if pars and pars[0] and pars[0][0][0] == "text":
        out.append(".PP")
        out.append(line("\\fB%s\\fP() \\(em %s" % (name, fmt(pars[0][0][1], names))))
        render_blocks(pars[0][1:], names, out)
        pars = pars[1:]
    render_pars(pars, names, out)
    if g:
        others = [m["name"] for m in g["members"] if m["name"] != name]
        out.append(".SS Shared with %s" % ("the functions of its group"
                                          if others else "its group"))
        out.append(".PP")
        if others:
            out.append(line("This comment of <%s> covers %s() and %s:" % (
                f["header"].name, "\\fB%s\\fP" % name,
                ", ".join("\\fB%s\\fP()" % o for o in others))))
        render_pars(gdoc.desc, names, out)
    used = [t for t in re.findall(r"\b(?:struct |enum )?(pmrep_\w+)\b", f["decl"].proto)
            if t in types and t != name]
    used = list(dict.fromkeys(used))
    if used:
        out.append(".SH DATA TYPES")
        for t in used:
            c, code, h = types[t]
            render_pars(paragraphs_doc(c.lines), names, out)
            out.append(".PP")
            out.append(".nf")
            out.append(".RS 4")
            for l in code.split("\n"):
                out.append("\\&" + esc(l.expandtabs(8)))
            out.append(".RE")
            out.append(".fi")
    if doc.returns or f["decl"].proto.startswith("int "):
        out.append(".SH RETURN VALUE")
        out.append(".PP")
        if doc.returns:
            out.append(line(fmt(" ".join(doc.returns), names)))
        else:
            out.append("0 on success, or a negative \\fBPMREP_E_*\\fP error code "
                       "(see \\fBpmrep\\fP(7), \\fBERROR CODES\\fP).")
    gerr = gdoc.errors if gdoc else []
    if doc.errors or gerr:
        out.append(".SH ERRORS")
        if doc.errors_intro:
            out.append(".PP")
            out.append(line(fmt(doc.errors_intro, names)))
        for e in doc.errors:
            out.append(".IP \\(bu 2")
            out.append(line(fmt(e, names)))
        if gerr:
            out.append(".PP")
            out.append("Common errors (the group's comment):")
            for e in gerr:
                out.append(".IP \\(bu 2")
                out.append(line(fmt(e, names)))
    thread = list(doc.thread)
    gthread = gdoc.thread if gdoc else []
    out.append(".SH THREAD SAFETY")
    out.append(".PP")
    if thread:
        out.append(line(fmt(" ".join(thread), names)))
    if gthread:
        if thread:
            out.append(".PP")
        out.append(line(fmt(("Group: " if thread else "") + " ".join(gthread), names)))
    if not thread and not gthread:
        conv = conventions.get(f["header"].name)
        if conv:
            out.append(line("The comment says nothing of its own; <%s> says "
                            "for all its functions: %s" % (
                                conv[0], fmt(conv[1], names))))
        else:
            out.pop()
            out.pop()
    fdconv = fd_conventions.get(f["header"].name) if name.endswith("_fd") else None
    if doc.fd or fdconv:
        out.append(".SH FD OWNERSHIP")
        if doc.fd:
            out.append(".PP")
            out.append(line(fmt(" ".join(doc.fd), names)))
        if fdconv:
            out.append(".PP")
            out.append(line("<%s> says for every fd it hands out: %s" % (
                fdconv[0], fmt(fdconv[1], names))))
    # SEE ALSO: the object's other functions, the group, those referenced
    obj = f["object"]
    see = [m for m in by_name if by_name[m]["object"] == obj and m != name]
    if g:
        see += [m["name"] for m in g["members"] if m["name"] not in see and
                m["name"] != name]
    text = "\n".join(f["comment"].lines)
    for m in re.findall(r"\bpmrep_\w+", text):
        if m in by_name and m != name and m not in see:
            see.append(m)
    out.append(".SH SEE ALSO")
    out.append(",\n".join("\\fB%s\\fP(3)" % s for s in see + []) +
               (",\n" if see else "") + "\\fBpmrep\\fP(7)")
    return "\n".join(out) + "\n", None


def type_names(code):
    """The types a documented piece of code defines (struct / enum / typedef)."""
    out = []
    for m in re.finditer(r"^\s*(?:struct|enum)\s+(pmrep_\w+)\s*\{", code, re.M):
        out.append(m.group(1))
    for m in re.finditer(r"^\s*typedef\b[^;]*?\b(pmrep_\w+)\s*\(", code, re.M | re.S):
        out.append(m.group(1))
    return out


def object_of(name, structs):
    best = None
    for s in structs:
        if name.startswith(s + "_") and (best is None or len(s) > len(best)):
            best = s
    if best:
        return best
    parts = name.split("_")
    return "_".join(parts[:2])


# ----------------------------------------------------------- pmrep(7) page

def fd_convention_of(top):
    """The header's conventions bullet about the fds it hands out."""
    for par in paragraphs_of(top.lines):
        for kind, val in blocks_of(par):
            if kind == "list":
                for it in val:
                    if FD_WORD.search(it) and OWN_WORD.search(it):
                        return it.rstrip(";. ") + "."
    return None


def conventions_of(top):
    """The header's 'Thread safety:' paragraph (sentences to the end)."""
    text = " ".join(l.strip() for l in top.lines)
    m = re.search(r"Thread safety: (.*)$", text)
    return m.group(1).strip() if m else None


def overview_page(headers, parsed, by_name, version, date, docs):
    names = set(by_name)
    out = ["'\\\" t",
           ".\\\" generated by scripts/gen-man.py from docs/man/pmrep.7.md and the"
           " comments of include/pmrep/*.h",
           th("pmrep", 7, version, date, "pmrep Overview")]
    out += [".nh", ".ad l"]
    md = os.path.join(docs, "pmrep.7.md")
    body = md_to_roff(open(md, encoding="utf-8").read(), skip_th=True)
    out += body
    out.append(".SH HEADERS")
    out.append(".PP")
    out.append("One section per public header, in the order they build on each "
               "other: its top comment (conventions that apply to each of its "
               "functions), then its sections as the header has them: the "
               "comments that cover a group of functions, the types and macros "
               "with their comments, and every function with its summary "
               "(each has its own page in section 3).")
    for h in headers:
        funcs, top, outline, _ = parsed[h.path]
        out.append(".SH \"<%s>\"" % h.name)
        if top:
            lines = list(top.lines)
            if lines:
                lines[0] = re.sub(r"^\S+\s+--\s*", "", lines[0])
            render_pars(paragraphs_doc(lines), names, out)
        for entry in outline:
            if entry[0] == "sec":
                out.append(".SS \"%s\"" % esc(entry[1]))
            elif entry[0] == "group":
                render_pars(paragraphs_doc(entry[1]["comment"].lines), names, out)
            elif entry[0] == "type":
                render_pars(paragraphs_doc(entry[1].lines), names, out)
                if entry[2].strip():
                    out.append(".PP")
                    out.append(".nf")
                    out.append(".RS 4")
                    for l in entry[2].split("\n"):
                        out.append("\\&" + esc(l.expandtabs(8)))
                    out.append(".RE")
                    out.append(".fi")
            elif entry[0] == "func":
                f = entry[1]
                d = Doc(f["comment"].lines, strip_name=True)
                out.append(".TP")
                out.append("\\fB%s\\fP(3)" % f["name"])
                out.append(line(fmt(d.summary, names)))
    out.append(".SH ERROR CODES")
    out.append(".PP")
    out.append("Every function that returns \\fBint\\fP returns 0 on success or "
               "one of these negative values (<pmrep/base.h>, \\fBenum "
               "pmrep_err\\fP); \\fBpmrep_err_to_str\\fP(3) names them.")
    base = [h for h in headers if h.name == "pmrep/base.h"]
    if base:
        for m in re.finditer(r"^\s*(PMREP_E_\w+)\s*=\s*(-?\d+),\s*/\*\s*(.*?)\s*\*/",
                             base[0].src, re.M | re.S):
            out.append(".TP")
            out.append("\\fB%s\\fP (%s)" % (m.group(1), esc(m.group(2))))
            out.append(line(fmt(re.sub(r"\s*\n\s*\*?\s*", " ", m.group(3)), names)))
    out.append(".SH SEE ALSO")
    out.append("\\fBpmrep\\fP(1), \\fBpmrep\\-target\\fP(8), \\fBlibpmem2\\fP(7)")
    return "\n".join(out) + "\n"


def paragraphs_doc(lines):
    return [blocks_of(p) for p in paragraphs_of(lines)]


# --------------------------------------------------------- markdown subset

def md_inline(s):
    star = "\x00"
    s = s.replace("\\*", star)
    return md_inline_(s).replace(star, "*")


def md_inline_(s):
    parts = re.split(r"(`[^`]+`|\*\*[^*]+\*\*|\*[^*]+\*)", s)
    out = []
    for p in parts:
        if p.startswith("`") and p.endswith("`") and len(p) > 1:
            out.append("\\fB" + esc(p[1:-1]) + "\\fP")
        elif p.startswith("**") and p.endswith("**") and len(p) > 3:
            out.append("\\fB" + esc(p[2:-2]) + "\\fP")
        elif p.startswith("*") and p.endswith("*") and len(p) > 1:
            out.append("\\fI" + esc(p[1:-1]) + "\\fP")
        else:
            out.append(esc(p))
    return "".join(out)


def md_to_roff(text, skip_th=False, version="", date=""):
    """The markdown subset of docs/man/*.md:
    first line  `% NAME SECTION MANUAL-TITLE`  (.TH)
    `# TITLE`   a section (.SH), `## Title` a subsection (.SS)
    paragraphs  separated by blank lines
    `- item`    a bullet (continuation lines indented)
    a paragraph whose first line is a term and whose next lines start with
    `: `        a tagged paragraph (.TP): term, then its text
    4-space indented lines: a literal block (.nf)
    inline      `code` and **bold** bold, *italic* italic."""
    out = []
    lines = text.split("\n")
    i = 0
    if lines and lines[0].startswith("% "):
        m = re.match(r"^% (\S+) (\S+) (.*)$", lines[0])
        if not skip_th:
            out.append(".\\\" generated by scripts/gen-man.py from docs/man: edit that")
            out.append(th(m.group(1), m.group(2), version, date, m.group(3)))
            out += [".nh", ".ad l"]
        i = 1
    par = []

    def flush():
        if not par:
            return
        if any(l.startswith(": ") for l in par[1:]):
            term = par[0]
            out.append(".TP")
            out.append(line(md_inline(term)))
            body = " ".join(l[2:].strip() if l.startswith(": ") else l.strip()
                            for l in par[1:])
            out.append(line(md_inline(body)))
        elif par[0].startswith("- "):
            items = []
            for l in par:
                if l.startswith("- "):
                    items.append(l[2:].strip())
                else:
                    items[-1] += " " + l.strip()
            for it in items:
                out.append(".IP \\(bu 2")
                out.append(line(md_inline(it)))
        else:
            out.append(".PP")
            out.append(line(md_inline(" ".join(l.strip() for l in par))))
        par.clear()

    while i < len(lines):
        l = lines[i]
        if l.startswith("    ") and not par:
            block = []
            while i < len(lines) and (lines[i].startswith("    ") or
                                      lines[i].strip() == ""):
                block.append(lines[i][4:])
                i += 1
            while block and block[-1].strip() == "":
                block.pop()
            out += [".PP", ".nf", ".RS 4"]
            out += ["\\&" + esc(b) for b in block]
            out += [".RE", ".fi"]
            continue
        if l.startswith("# "):
            flush()
            out.append('.SH "%s"' % esc(l[2:].strip()))
        elif l.startswith("## "):
            flush()
            out.append('.SS "%s"' % esc(l[3:].strip()))
        elif l.strip() == "":
            flush()
        else:
            par.append(l)
        i += 1
    flush()
    # a .PP right after .SH / .SS is redundant (groff -ww is silent on it,
    # but keep the output tidy)
    tidy = []
    for o in out:
        if o == ".PP" and tidy and (tidy[-1].startswith(".SH") or
                                    tidy[-1].startswith(".SS")):
            continue
        tidy.append(o)
    return tidy


# --------------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out")
    ap.add_argument("--version", default="")
    ap.add_argument("--date", default=None)
    ap.add_argument("--docs", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "docs", "man"))
    ap.add_argument("--list", action="store_true")
    ap.add_argument("headers", nargs="+")
    a = ap.parse_args()
    date = a.date
    if date is None:
        sde = os.environ.get("SOURCE_DATE_EPOCH")
        if sde:
            import time
            date = time.strftime("%Y-%m-%d", time.gmtime(int(sde)))
        else:
            date = ""

    headers = [Header(p) for p in a.headers]
    parsed = {}
    errors = []
    structs = set()
    for h in headers:
        parsed[h.path] = classify(h)
        errors += parsed[h.path][3]
        structs.update(re.findall(r"\bstruct (pmrep_\w+)", h.src))
    by_name = {}
    # per header: (the header that states them, the text)
    conventions = {}
    fd_conventions = {}
    for h in headers:
        funcs, top, _, _ = parsed[h.path]
        if top:
            c = conventions_of(top)
            if c:
                conventions[h.name] = (h.name, c)
            c = fd_convention_of(top)
            if c:
                fd_conventions[h.name] = (h.name, c)
    # a header whose top comment says "The conventions of <pmrep/x.h>
    # apply" and states none of its own has x's
    for h in headers:
        top = parsed[h.path][1]
        m = top and re.search(r"The conventions of <(pmrep/\w+\.h)> apply",
                              " ".join(top.lines))
        if m:
            for conv in (conventions, fd_conventions):
                if h.name not in conv and m.group(1) in conv:
                    conv[h.name] = conv[m.group(1)]
    for h in headers:
        funcs = parsed[h.path][0]
        for f in funcs:
            if f["name"] in by_name:
                errors.append("%s: declared twice" % f["name"])
            f["object"] = object_of(f["name"], structs)
            by_name[f["name"]] = f

    types = {}
    for h in headers:
        for entry in parsed[h.path][2]:
            if entry[0] == "type":
                for t in type_names(entry[2]):
                    types.setdefault(t, (entry[1], entry[2], h))
    pages = {}
    for name, f in by_name.items():
        if f["comment"] is None:
            continue
        page, err = func_page(f, by_name, a.version, date, conventions, fd_conventions, types)
        if err:
            errors.append(err)
        else:
            pages[name] = page

    if a.list:
        for name, f in by_name.items():
            g = f["group"]
            d = Doc(f["comment"].lines, strip_name=True) if f["comment"] else None
            print("%s\t%s\t%s" % (name, (g["comment"].lines[0][:40] if g else "-"),
                                  d.summary if d else "(none)"))
    if errors:
        for e in errors:
            print("gen-man: " + e, file=sys.stderr)
        print("gen-man: %d exported function(s) without a doc comment in the "
              "recognised structure (' * name -- summary' right before the "
              "declaration)" % len(errors), file=sys.stderr)
        return 1
    if a.list:
        return 0
    if not a.out:
        ap.error("--out DIR is required")

    man3 = os.path.join(a.out, "man3")
    os.makedirs(man3, exist_ok=True)
    for old in os.listdir(man3):
        if old.endswith(".3") and old[:-2] not in pages:
            os.unlink(os.path.join(man3, old))
    for name, page in pages.items():
        write_if_changed(os.path.join(man3, name + ".3"), page)
    os.makedirs(os.path.join(a.out, "man7"), exist_ok=True)
    write_if_changed(os.path.join(a.out, "man7", "pmrep.7"),
                     overview_page(headers, parsed, by_name, a.version, date, a.docs))
    for md in sorted(os.listdir(a.docs)):
        m = re.match(r"^(.*)\.(\d)\.md$", md)
        if not m or md == "pmrep.7.md":
            continue
        sec = m.group(2)
        os.makedirs(os.path.join(a.out, "man" + sec), exist_ok=True)
        text = open(os.path.join(a.docs, md), encoding="utf-8").read()
        write_if_changed(os.path.join(a.out, "man" + sec, m.group(1) + "." + sec),
                         "\n".join(md_to_roff(text, version=a.version, date=date)) + "\n")
    print("gen-man: %d section-3 pages, pmrep(7) and %s in %s" % (
        len(pages), ", ".join(sorted(d[:-3] for d in os.listdir(a.docs)
                                     if d.endswith(".md") and d != "pmrep.7.md")),
        a.out))
    return 0


def write_if_changed(path, text):
    try:
        if open(path, encoding="utf-8").read() == text:
            return
    except OSError:
        pass
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(path + ".tmp", path)


if __name__ == "__main__":
    sys.exit(main())
