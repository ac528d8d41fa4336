"""Exports for learning management systems: ``labs export qti`` and ``labs export scorm``.

A lab's quiz and pages leave the site in the two forms an LMS imports: an IMS QTI 2.1 content
package of its quiz (``qti.py``: one assessment item per question, the test that orders them),
and a SCORM 1.2 package of its page (``scorm.py``: one SCO whose page reports the quiz's score
and status to the LMS through the SCORM API, ``static/scorm.js``). Both start from the site a
build makes (every claim and answer key checked) and read a lab's quiz from its built page,
through the contract every kind's questions keep there (``quizpage.py``; docs/lms.md): so the
questions of any kind, one added later too, go out as the choices they are on the page.

``zips.py`` writes the packages byte for byte the same from the same input; ``htmltree.py``
reads a page's HTML into an element tree. A module here imports the build (:mod:`generator.build`),
the errors and the standard library, and no lab kind.
"""
