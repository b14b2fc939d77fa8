#!/usr/bin/env python3
"""Builds internal/data/clean/testdata/langid/labelled.jsonl: documents
labelled by hand (by reading them) as English prose to keep or non-English
pages to reject, for clean's TestLangIDLabelled.

  python3 tools/langid/make_labelled.py > internal/data/clean/testdata/langid/labelled.jsonl

Inputs: the shipped data under $KESTREL_DATA (default /work/shared/data)
and the real-world web pages of go-trafilatura's evaluation corpus in the
Go module cache (github.com/markusmobius/go-trafilatura@v1.12.2/test-files/
comparison, a dependency of internal/data/corpus), from which the text of
<p>, <h1>-<h3> and <li> elements is taken. Every text is cut to at most
MAXC characters at a word boundary. The labels (LABELS below, and the
language of each page) come from reading each text; the provenance and
licences are in testdata/langid/SOURCE.
"""
import gzip, html.parser, json, os, re, sys

DATA = os.environ.get("KESTREL_DATA", "/work/shared/data")
GOMOD = os.path.join(os.environ.get("GOMODCACHE", os.path.expanduser("~/go/pkg/mod")),
                     "github.com/markusmobius/go-trafilatura@v1.12.2/test-files/comparison")
MAXC = 2500

def cut(t):
    t = t.strip()
    if len(t) <= MAXC:
        return t
    i = t.rfind(" ", 0, MAXC)
    return t[: i if i > 0 else MAXC]

out = []
def add(id_, src, lang, text):
    out.append({"id": id_, "source": src, "lang": lang, "label": "keep" if lang == "en" else "reject", "text": cut(text)})

# WikiText-2 validation articles (English): the first 8 articles.
arts, cur = [], None
for line in open(os.path.join(DATA, "wikitext-2/valid.txt"), encoding="utf-8"):
    if re.match(r"^ = [^=].* = $", line):
        cur = [line]; arts.append(cur)
    elif cur is not None:
        cur.append(line)
for i, a in enumerate(arts[:8]):
    add(f"wikitext-2/valid.txt#article{i+1}", "wikitext-2", "en", "".join(a))

# Tiny Shakespeare (English verse and dialogue): 6 chunks 150 KB apart.
sh = open(os.path.join(DATA, "tinyshakespeare/input.txt"), encoding="utf-8").read()
for i in range(6):
    off = sh.find("\n\n", i * 150000) + 2
    add(f"tinyshakespeare/input.txt@{off}", "tinyshakespeare", "en", sh[off: off + 3000])

# Dolma's cleaned Common Crawl head (English web pages), >= 200 characters.
for f in ["cc_en_head-0091.jsonl", "cc_en_head-0174.jsonl"]:
    for n, line in enumerate(open(os.path.join(DATA, "dolma-testdata/cc_en_head", f), encoding="utf-8"), 1):
        t = json.loads(line)["text"]
        if len(t) >= 200:
            add(f"dolma-testdata/cc_en_head/{f}:{n}", "dolma-cc_en_head", "en", t)

# Common Crawl whirlwind WET record: the Aragonese Wikipedia page
# (an.wikipedia.org/wiki/Escopete), the shipped data's non-English page.
raw = gzip.open(os.path.join(DATA, "commoncrawl-whirlwind/whirlwind.warc.wet.gz")).read().decode("utf-8")
for rec in raw.split("WARC/1.0\r\n"):
    if "WARC-Type: conversion" in rec:
        body = rec.split("\r\n\r\n", 1)[1]
        add("commoncrawl-whirlwind/whirlwind.warc.wet.gz:an.wikipedia.org/wiki/Escopete", "commoncrawl-whirlwind", "an", body)

class P(html.parser.HTMLParser):
    keep = {"p", "h1", "h2", "h3", "li"}
    def __init__(self):
        super().__init__(); self.depth = 0; self.skip = 0; self.parts = []; self.buf = []
    def handle_starttag(self, tag, a):
        if tag in ("script", "style"): self.skip += 1
        if tag in self.keep: self.depth += 1
    def handle_endtag(self, tag):
        if tag in ("script", "style") and self.skip: self.skip -= 1
        if tag in self.keep and self.depth:
            self.depth -= 1
            if self.depth == 0:
                s = " ".join("".join(self.buf).split())
                if len(s) > 40: self.parts.append(s)
                self.buf = []
    def handle_data(self, d):
        if self.depth and not self.skip: self.buf.append(d)

# go-trafilatura's real-world pages, language read from the text.
PAGES = [
    ("de", "7mind.de.grenzen.html"), ("de", "handelsblatt.com.grenzschliessungen.html"),
    ("de", "deutschlandfunk.de.titanic.html"), ("de", "cicero.de.pandemie.html"),
    ("de", "bfs.de-radon.html"), ("de", "chefkoch.de.mandarinen.html"),
    ("pl", "Eurostat_ Polska z najniższym bezrobociem w całej UE.html"),
    ("pl", "Finowie odkrywają wino _ Res Publica Nowa.html"),
    ("pl", "Rosjanie sugerują natychmiastowe odcięcie Polski od gazu - Energetyka24.html"),
    ("pl", "Windows 10 od lipca przestanie obsługiwać Adobe Flash.html"),
    ("es", "clarin.com-albertofernandez.html"), ("es", "cooperativa.cl-presidente.html"),
    ("es", "cubadebate.cu-sesiona.html"), ("es", "confidencial.com-ortega.html"),
    ("pt", "brasil247.com-militares.html"), ("pt", "correio24horas.com.br-PMS.html"),
    ("pt", "campograndenews.com.br-adolescente.html"),
    ("fr", "aoc.media.archaisme.html"), ("fr", "bondyblog.fr.paris-8.html"),
    ("fr", "dalloz-actualite.fr.raoult.html"), ("fr", "francais.radio.cz-ministre.html"),
    ("it", "lastampa.it.temperature.html"), ("it", "parcoabruzzo.it.58354.html"),
    ("zh", "baike.baidu.com.tanya.html"), ("zh", "banyuetan.org.1000200033136171577956287380194268_1.html"),
    ("ja", "nhk.or.jp.k100.html"), ("ar", "assabah.com.tn.article.html"),
    ("en", "bbc.com.52241221.html"), ("en", "cbsnews.com.carolina.html"),
    ("en", "axios.com.future.html"), ("en", "japantimes.co.jp.surgical.html"),
]
for lang, name in PAGES:
    p = P()
    p.feed(open(os.path.join(GOMOD, name), encoding="utf-8", errors="replace").read())
    add(f"go-trafilatura/test-files/comparison/{name}", "go-trafilatura", lang, "\n".join(p.parts))

for r in out:
    sys.stdout.write(json.dumps(r, ensure_ascii=False) + "\n")
