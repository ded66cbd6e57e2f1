"""Local emulators of the sources' APIs on 127.0.0.1, for the tests, the benchmarks and the demo.

- :mod:`connectors.emulators.kit`        the shared router, fault injection, control API and CLI;
- :mod:`connectors.emulators.jira`, :mod:`~connectors.emulators.confluence`, :mod:`~connectors.emulators.slack`
  one emulator per source, each runnable as ``python -m connectors.emulators.<source>``;
- :mod:`connectors.emulators.world`      the demo company they share (people, channels, spaces);
- :mod:`connectors.emulators.jira_jql`   the JQL subset the Jira emulator evaluates.

Production code (``app``, ``connectors.<source>`` and the shared connector modules) never imports this
package: an import-linter contract in pyproject.toml keeps it so. The emulators may import the connectors'
shared modules (``webhook_sig``, ``timeutil``) to sign and format exactly as the real sources do.
"""
