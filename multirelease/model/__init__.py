"""The data model: tables, schemas, releases and sequences as arrays, with no file format in it.

* :mod:`.hierarchy` - generalization hierarchies and the leaf-code encoding every value is stored in;
* :mod:`.schema` - attributes, their roles (identifier, quasi, sensitive, linking) and the schema of a table;
* :mod:`.table` - raw tables (snapshots) keyed by identifier, and the changes between two of them;
* :mod:`.release` - what a recipient sees, as leaf-code ranges (its CSV layout: ``Release.to_frame``);
* :mod:`.sequence` - release sequences and what the adversary knows (:class:`SequenceView`, :class:`Adversary`);
* :mod:`.linking` - the published columns that are neither quasi-identifier nor sensitive;
* :mod:`.transitions` - the public update model of sensitive values (Li & Zhou, 000);
* :mod:`.dynamics` - generated update streams of fully dynamic data sets (Li & Zhou, 000, section VI.A);
* :mod:`.principles` - single-class principles (k-anonymity, l-diversity, (alpha, k)-anonymity);
* :mod:`.metrics` - information loss and utility of one release (LM, EM, discernibility...).

Files are read and written by :mod:`multirelease.formats`; attacks read a :class:`~.sequence.SequenceView`.
"""
