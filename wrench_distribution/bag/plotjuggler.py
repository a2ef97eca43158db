"""A PlotJuggler layout that opens ``samples.csv`` with the right time axis.

Open it with ``plotjuggler --layout plotjuggler_layout.xml`` (PlotJuggler asks to
reload the referenced ``samples.csv``), or load ``samples.csv`` by hand with
*File > Load data* and pick ``stamp`` as the time column.
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence
import xml.etree.ElementTree as ET

from wrench_distribution.engine.weight_schedule import WEIGHT_KEY

_COLORS = ['#1f77b4', '#d62728', '#1ac938', '#ff7f0e', '#f14cc1', '#9467bd',
           '#17becf', '#bcbd22']


def _plot(parent: ET.Element, curves: Sequence[str]) -> None:
    area = ET.SubElement(parent, 'DockArea', name='...')
    plot = ET.SubElement(area, 'plot', mode='TimeSeries', style='Lines', flip_x='false',
                         flip_y='false')
    ET.SubElement(plot, 'range', left='0', right='1', top='1', bottom='0')
    ET.SubElement(plot, 'limitY')
    for j, name in enumerate(curves):
        ET.SubElement(plot, 'curve', name=name, color=_COLORS[j % len(_COLORS)])


def _tab(widget: ET.Element, title: str, plots: Sequence[Sequence[str]]) -> None:
    tab = ET.SubElement(widget, 'Tab', tab_name=title, containers='1')
    container = ET.SubElement(tab, 'Container')
    size = 1.0 / max(len(plots), 1)
    split = ET.SubElement(container, 'DockSplitter', orientation='-', count=str(len(plots)),
                          sizes=';'.join([f'{size:.6f}'] * len(plots)))
    for curves in plots:
        _plot(split, curves)


def _csv_plugin(parent: ET.Element) -> None:
    plugin = ET.SubElement(parent, 'plugin', ID='DataLoad CSV')
    ET.SubElement(plugin, 'default', time_axis='stamp', delimiter='0')


def write_layout(path: Path, csv_name: str, effectors: Sequence[str],
                 basis_names: Sequence[str], weights: bool = False) -> Path:
    """Write the layout: one tab for the internal load, one per effector, one for the contact weights.

    :param path: the layout file.
    :param csv_name: the CSV file it opens.
    :param effectors: the effectors (a tab each).
    :param basis_names: the internal-load columns.
    :param weights: the contact weights were followed (their ``<effector>.contact_weight`` columns
        get a tab).
    :return: ``path``.
    """
    root = ET.Element('root')
    widget = ET.SubElement(root, 'tabbed_widget', name='Main Window', parent='main_window')
    _tab(widget, 'internal load', [
        [f'internal_load.{b}' for b in basis_names],
        ['internal_load_norm', 'residual'],
        [f'resultant.{c}' for c in ('fx', 'fy', 'fz')],
        [f'resultant.{c}' for c in ('tx', 'ty', 'tz')]])
    for eff in effectors:
        _tab(widget, eff, [
            [f'{eff}.constraint.{c}' for c in ('fx', 'fy', 'fz')],
            [f'{eff}.constraint.{c}' for c in ('tx', 'ty', 'tz')],
            [f'{eff}.manipulating.{c}' for c in ('fx', 'fy', 'fz')]])
    if weights:
        _tab(widget, 'contact weights', [[f'{eff}.{WEIGHT_KEY}' for eff in effectors]])
    ET.SubElement(widget, 'currentTabIndex', index='0')
    ET.SubElement(root, 'use_relative_time_offset', enabled='1')
    _csv_plugin(ET.SubElement(root, 'Plugins'))
    files = ET.SubElement(root, 'previouslyLoaded_Datafiles')
    info = ET.SubElement(files, 'fileInfo', filename=csv_name, prefix='')
    _csv_plugin(info)
    ET.indent(root)
    Path(path).write_text("<?xml version='1.0' encoding='UTF-8'?>\n"
                          + ET.tostring(root, encoding='unicode') + '\n')
    return Path(path)
