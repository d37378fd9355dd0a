//! Loading fixture files (`wpds seed FILE.json`): placeholder until the loader lands.
