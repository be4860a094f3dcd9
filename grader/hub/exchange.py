"""nbgrader's submit, with the submission closed to everyone but its student (and root, who collects it).

nbgrader 0.9.6 leaves each folder it submits into the exchange's inbound/ at mode 0777 with 0644
files: a student who learns another's folder name could read that notebook and write into it. After
nbgrader's own copy this makes the folder 0750 and its files 0640, in the student's own group, of which
no one else is a member. Only root reads them: `make hub-grade`'s checked collect (grader/hub/collect.py).
This is a courtesy, not the protection: a student can change their own folder's modes at will, and the
collect trusts nothing in it. Installed into the hub's environment as `tapelab_hub_exchange`, named by the students'
nbgrader_config.py (`c.ExchangeFactory.submit`).
"""
import os

from nbgrader.exchange.default.submit import ExchangeSubmit

FOLDER_MODE = 0o750
FILE_MODE = 0o640


class PrivateSubmit(ExchangeSubmit):
    """Submit as nbgrader does, then close the submission's folder to other students."""

    def copy_files(self):
        super().copy_files()
        close(os.path.join(self.inbound_path, self.assignment_filename))


def close(folder: str) -> None:
    """Give `folder`, everything in it, and itself the modes above (files first, then folders)."""
    for parent, _, files in os.walk(folder, topdown=False):
        for name in files:
            os.chmod(os.path.join(parent, name), FILE_MODE)
        os.chmod(parent, FOLDER_MODE)
