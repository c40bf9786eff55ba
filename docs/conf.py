# SPDX-License-Identifier: GPL-2.0
#
# Sphinx configuration of krdma's documentation (make docs).  The uAPI
# page is rendered from uapi/krdma.h by the kernel's own kernel-doc
# extension, as Documentation/userspace-api/iommufd.rst is from
# iommufd.h; the extension and the kernel-doc script come from the
# kernel source make docs unpacks (LINUX_SOURCE).

import os
import sys

_linux = os.environ['LINUX_SOURCE']
sys.path.insert(0, os.path.join(_linux, 'Documentation', 'sphinx'))

project = 'krdma'
copyright = 'The krdma authors'
release = os.environ.get('KRDMA_VERSION', '')
version = release

extensions = ['kerneldoc']
kerneldoc_bin = os.path.join(_linux, 'scripts', 'kernel-doc')
kerneldoc_srctree = os.path.abspath(os.path.join(os.path.dirname(__file__), '..'))

master_doc = 'index'
exclude_patterns = ['_build']
primary_domain = 'c'
highlight_language = 'none'
html_theme = 'alabaster'
