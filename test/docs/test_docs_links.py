"""Every relative link of README.md and docs/*.md points at a file that exists (from the page's directory)."""
import glob
import os
import re

import pytest

from ros_harness import REPO

LINK = re.compile(r'\]\((?P<target>[^)\s#]+)(?:#[^)\s]*)?\)')
PAGES = ['README.md'] + sorted(os.path.relpath(p, REPO) for p in glob.glob(os.path.join(REPO, 'docs', '*.md')))


@pytest.mark.parametrize('page', PAGES)
def test_relative_links_resolve(page):
    with open(os.path.join(REPO, page), encoding='utf-8') as f:
        text = f.read()
    base = os.path.dirname(os.path.join(REPO, page))
    broken = [m.group('target') for m in LINK.finditer(text)
              if '://' not in m.group('target') and not m.group('target').startswith('mailto:')
              and not os.path.exists(os.path.join(base, m.group('target')))]
    assert not broken, f'{page}: {broken}'
