//! The file-system half of the fault injector (see the module doc of `io::fault`).

#[allow(unused_imports)]
use super::*;
// ---------------------------------------------------------------------------------------
// Vfs

type FileId = u64;

/// What the injector knows about a file's durable contents.
pub(super) enum Durable {
    /// Durable contents equal the volatile file.
    Clean,
    /// Durable contents are the volatile file's first `common` bytes followed by `tail`.
    Dirty { common: u64, tail: Vec<u8> },
    /// The file has no volatile name any more; these are its durable contents.
    Detached(Vec<u8>),
}

/// One wrapped vfs: volatile and durable directories (name -> file id) and per-file
/// durable state. Invariant: ids named in `names` are `Clean` or `Dirty`; ids named only in
/// `durable` are `Detached`; other ids are forgotten.
pub(super) struct VfsModel {
    pub(super) inner: Arc<dyn Vfs>,
    pub(super) init_error: Option<String>,
    pub(super) next_id: FileId,
    pub(super) names: BTreeMap<String, FileId>,
    pub(super) durable: BTreeMap<String, FileId>,
    pub(super) files: HashMap<FileId, Durable>,
}

/// A file of the crash image.
enum Img {
    /// The volatile file of the same name is already right.
    Keep,
    Bytes(Vec<u8>),
}

impl VfsModel {
    pub(super) fn new(inner: Arc<dyn Vfs>) -> Self {
        let mut m = VfsModel {
            inner,
            init_error: None,
            next_id: 0,
            names: BTreeMap::new(),
            durable: BTreeMap::new(),
            files: HashMap::new(),
        };
        match m.inner.list() {
            Ok(list) => {
                for name in list {
                    let id = m.fresh();
                    m.names.insert(name, id);
                    m.files.insert(id, Durable::Clean);
                }
                m.durable = m.names.clone();
            }
            Err(e) => m.init_error = Some(e.to_string()),
        }
        m
    }

    fn fresh(&mut self) -> FileId {
        self.next_id += 1;
        self.next_id
    }

    fn check_init(&self, what: &str) -> Result<()> {
        match &self.init_error {
            Some(e) => Err(Error::io(
                what.to_string(),
                std::io::Error::other(format!("listing the directory when wrapping it: {e}")),
            )),
            None => Ok(()),
        }
    }

    fn vname(&self, id: FileId) -> Option<&str> {
        self.names
            .iter()
            .find(|(_, &v)| v == id)
            .map(|(n, _)| n.as_str())
    }

    fn is_durable(&self, id: FileId) -> bool {
        self.durable.values().any(|&v| v == id)
    }

    /// The durable contents of file `id`.
    fn durable_content(&self, id: FileId) -> Result<Vec<u8>> {
        if let Some(Durable::Detached(d)) = self.files.get(&id) {
            return Ok(d.clone());
        }
        let name = self.vname(id).ok_or_else(|| lost_handle("vfs file"))?;
        let mut v = self.inner.read(name)?;
        if let Some(Durable::Dirty { common, tail }) = self.files.get(&id) {
            v.truncate(*common as usize);
            v.extend_from_slice(tail);
        }
        Ok(v)
    }

    /// Durable state of `id` (volatile `name`) after cutting the volatile file to `len`.
    fn after_cut(&self, id: FileId, name: &str, len: u64) -> Result<Option<Durable>> {
        match self.files.get(&id) {
            Some(Durable::Dirty { common, tail }) => {
                if len >= *common {
                    return Ok(None);
                }
                let v = self.inner.read(name)?;
                let end = (*common as usize).min(v.len());
                let start = (len as usize).min(end);
                let mut t = v[start..end].to_vec();
                t.extend_from_slice(tail);
                Ok(Some(Durable::Dirty {
                    common: len,
                    tail: t,
                }))
            }
            _ => {
                let cur = self.inner.len(name)?;
                if len >= cur {
                    return Ok(Some(Durable::Dirty {
                        common: cur,
                        tail: Vec::new(),
                    }));
                }
                let v = self.inner.read(name)?;
                let start = (len as usize).min(v.len());
                Ok(Some(Durable::Dirty {
                    common: len,
                    tail: v[start..].to_vec(),
                }))
            }
        }
    }

    fn create(&mut self, name: &str) -> Result<()> {
        match self.names.get(name).copied() {
            Some(id) => {
                let st = self.after_cut(id, name, 0)?;
                self.inner.create(name)?;
                if let Some(st) = st {
                    self.files.insert(id, st);
                }
            }
            None => {
                self.inner.create(name)?;
                let id = self.fresh();
                self.names.insert(name.to_string(), id);
                self.files.insert(
                    id,
                    Durable::Dirty {
                        common: 0,
                        tail: Vec::new(),
                    },
                );
            }
        }
        Ok(())
    }

    fn append(&mut self, name: &str, data: &[u8]) -> Result<()> {
        let Some(&id) = self.names.get(name) else {
            return self.inner.append(name, data);
        };
        if let Some(Durable::Clean) = self.files.get(&id) {
            let cur = self.inner.len(name)?;
            self.files.insert(
                id,
                Durable::Dirty {
                    common: cur,
                    tail: Vec::new(),
                },
            );
        }
        self.inner.append(name, data)
    }

    fn truncate(&mut self, name: &str, len: u64) -> Result<()> {
        let Some(&id) = self.names.get(name) else {
            return self.inner.truncate(name, len);
        };
        let st = self.after_cut(id, name, len)?;
        self.inner.truncate(name, len)?;
        if let Some(st) = st {
            self.files.insert(id, st);
        }
        Ok(())
    }

    fn sync(&mut self, name: &str) -> Result<()> {
        self.inner.sync(name)?;
        if let Some(&id) = self.names.get(name) {
            self.files.insert(id, Durable::Clean);
        }
        Ok(())
    }

    /// `id` loses its volatile name: keep its durable contents if its name is durable.
    fn detach_content(&self, id: Option<FileId>) -> Result<Option<Vec<u8>>> {
        match id {
            Some(d) if self.is_durable(d) => Ok(Some(self.durable_content(d)?)),
            _ => Ok(None),
        }
    }

    fn detach(&mut self, id: Option<FileId>, content: Option<Vec<u8>>) {
        if let Some(d) = id {
            match content {
                Some(c) => self.files.insert(d, Durable::Detached(c)),
                None => self.files.remove(&d),
            };
        }
    }

    fn rename(&mut self, from: &str, to: &str) -> Result<()> {
        let Some(&id) = self.names.get(from) else {
            return self.inner.rename(from, to);
        };
        if from == to {
            return self.inner.rename(from, to);
        }
        let displaced = self.names.get(to).copied();
        let keep = self.detach_content(displaced)?;
        self.inner.rename(from, to)?;
        self.names.remove(from);
        self.names.insert(to.to_string(), id);
        self.detach(displaced, keep);
        Ok(())
    }

    fn remove(&mut self, name: &str) -> Result<()> {
        let Some(&id) = self.names.get(name) else {
            return self.inner.remove(name);
        };
        let keep = self.detach_content(Some(id))?;
        self.inner.remove(name)?;
        self.names.remove(name);
        self.detach(Some(id), keep);
        Ok(())
    }

    fn sync_dir(&mut self) -> Result<()> {
        self.inner.sync_dir()?;
        self.durable = self.names.clone();
        let live: HashSet<FileId> = self.names.values().copied().collect();
        self.files.retain(|id, _| live.contains(id));
        Ok(())
    }

    /// Make `img` hold bytes (the durable contents of `id`).
    fn materialize<'a>(&self, id: FileId, img: &'a mut Img) -> Result<&'a mut Vec<u8>> {
        if let Img::Keep = img {
            *img = Img::Bytes(self.durable_content(id)?);
        }
        match img {
            Img::Bytes(b) => Ok(b),
            Img::Keep => Err(lost_handle("vfs file")),
        }
    }

    /// Apply a crash-point create, truncate, rename or remove to the durable image.
    fn apply_dir_op(
        &self,
        op: &VfsOp,
        dir: &mut BTreeMap<String, FileId>,
        content: &mut HashMap<FileId, Img>,
    ) -> Result<()> {
        match op {
            VfsOp::Append { .. } => {}
            VfsOp::Create(name) => match self.names.get(name) {
                Some(&id) => {
                    if let Some(img) = content.get_mut(&id) {
                        *img = Img::Bytes(Vec::new());
                    }
                }
                None => {
                    let id = self.next_id + 1;
                    dir.insert(name.clone(), id);
                    content.insert(id, Img::Bytes(Vec::new()));
                }
            },
            VfsOp::Truncate { name, len } => {
                if let Some(&id) = self.names.get(name) {
                    if let Some(img) = content.get_mut(&id) {
                        self.materialize(id, img)?.resize(*len as usize, 0);
                    }
                }
            }
            VfsOp::Rename { from, to } => {
                if let (Some(&id), false) = (self.names.get(from), from == to) {
                    let bytes = match content.remove(&id) {
                        Some(Img::Bytes(b)) => b,
                        _ => self.durable_content(id)?,
                    };
                    content.insert(id, Img::Bytes(bytes));
                    dir.retain(|_, v| *v != id);
                    dir.insert(to.clone(), id);
                }
            }
            VfsOp::Remove(name) => {
                if let Some(&id) = self.names.get(name) {
                    dir.retain(|_, v| *v != id);
                }
            }
        }
        Ok(())
    }

    /// The crash image: durable name -> contents.
    fn image(&self, op: Option<&VfsOp>, rng: &mut Rng) -> Result<BTreeMap<String, Img>> {
        let mut dir = self.durable.clone();
        let mut content: HashMap<FileId, Img> = HashMap::new();
        for (name, &id) in &dir {
            let keep = matches!(self.files.get(&id), Some(Durable::Clean))
                && self.names.get(name) == Some(&id);
            let img = if keep {
                Img::Keep
            } else {
                Img::Bytes(self.durable_content(id)?)
            };
            content.insert(id, img);
        }
        match op {
            None => {}
            Some(VfsOp::Append { name, off, data }) => {
                let k = torn_prefix(*off, data.len() as u64, rng) as usize;
                if let Some(&id) = self.names.get(name) {
                    if let Some(img) = content.get_mut(&id) {
                        if k > 0 {
                            let c = self.materialize(id, img)?;
                            let off = *off as usize;
                            if c.len() < off + k {
                                c.resize(off + k, 0);
                            }
                            c[off..off + k].copy_from_slice(&data[..k]);
                        }
                    }
                }
            }
            // Create, truncate, rename, remove: applied or not, on a coin flip.
            Some(dir_op) if rng.coin() => self.apply_dir_op(dir_op, &mut dir, &mut content)?,
            Some(_) => {}
        }
        let mut out = BTreeMap::new();
        for (name, id) in dir {
            if let Some(img) = content.remove(&id) {
                out.insert(name, img);
            }
        }
        Ok(out)
    }

    /// Rewrite the inner vfs to the crash image.
    pub(super) fn restore(&mut self, op: Option<&VfsOp>, rng: &mut Rng) -> Result<()> {
        self.check_init("building the crash image")?;
        let image = self.image(op, rng)?;
        for name in self.inner.list()? {
            if !matches!(image.get(&name), Some(Img::Keep)) {
                self.inner.remove(&name)?;
            }
        }
        for (name, img) in &image {
            if let Img::Bytes(b) = img {
                self.inner.create(name)?;
                if !b.is_empty() {
                    self.inner.append(name, b)?;
                }
                self.inner.sync(name)?;
            }
        }
        self.inner.sync_dir()?;
        self.files.clear();
        self.names.clear();
        self.durable.clear();
        Ok(())
    }
}

/// Bytes of an append of `len` bytes at file offset `off` that reach the crash image: 0,
/// `len`, or a cut at a multiple of 512 inside the append, uniformly among those.
fn torn_prefix(off: u64, len: u64, rng: &mut Rng) -> u64 {
    if len == 0 {
        return 0;
    }
    let s = SECTOR as u64;
    let inside = (off + len - 1) / s - off / s; // multiples of 512 strictly inside
    let r = rng.below(inside + 2);
    if r == 0 {
        0
    } else if r == inside + 1 {
        len
    } else {
        (off / s + r) * s - off
    }
}

/// A [`Vfs`] wrapped by [`Faults`]: ticks the shared clock, tracks durable contents and
/// names, fails and crashes as planned.
pub struct FaultyVfs {
    pub(super) faults: Faults,
    pub(super) idx: usize,
}

impl FaultyVfs {
    /// The injector this vfs belongs to.
    pub fn faults(&self) -> &Faults {
        &self.faults
    }

    /// Run a clock-ticking operation: admit, tick (crashing with `crash_op` at the crash
    /// point, after `before_crash`), else `f` on the model.
    fn ticking(
        &self,
        kind: OpKind,
        what: impl Fn() -> String,
        crash_op: impl FnOnce(&VfsModel) -> Result<Option<VfsOp>>,
        f: impl FnOnce(&mut VfsModel) -> Result<()>,
    ) -> Result<()> {
        let mut guard = self.faults.lock();
        let st = &mut *guard;
        st.admit(kind, &what)?;
        let model = st
            .vfses
            .get_mut(self.idx)
            .ok_or_else(|| lost_handle("vfs"))?;
        model.check_init(&what())?;
        if st.tick() {
            let op = st
                .vfses
                .get(self.idx)
                .map(crash_op)
                .transpose()
                .ok()
                .flatten()
                .flatten();
            if op.is_none() && kind == OpKind::VfsSync {
                // Syncs take effect at the crash point.
                if let Some(m) = st.vfses.get_mut(self.idx) {
                    let _ = f(m);
                }
            }
            st.crash(op.map(|op| CrashOp::Vfs { vfs: self.idx, op }));
            return Err(power_loss(&what()));
        }
        let model = st
            .vfses
            .get_mut(self.idx)
            .ok_or_else(|| lost_handle("vfs"))?;
        f(model)
    }

    /// Run a non-ticking operation (reads): refused after a crash or by an injected
    /// [`OpKind::VfsRead`] failure.
    fn reading<T>(
        &self,
        what: impl Fn() -> String,
        f: impl FnOnce(&dyn Vfs) -> Result<T>,
    ) -> Result<T> {
        let mut st = self.faults.lock();
        st.admit(OpKind::VfsRead, &what)?;
        let model = st.vfses.get(self.idx).ok_or_else(|| lost_handle("vfs"))?;
        model.check_init(&what())?;
        f(&*model.inner)
    }
}

impl Vfs for FaultyVfs {
    fn create(&self, name: &str) -> Result<()> {
        self.ticking(
            OpKind::VfsWrite,
            || format!("creating {name}"),
            |_| Ok(Some(VfsOp::Create(name.to_string()))),
            |m| m.create(name),
        )
    }

    fn append(&self, name: &str, data: &[u8]) -> Result<()> {
        self.ticking(
            OpKind::VfsWrite,
            || format!("appending to {name}"),
            |m| {
                Ok(if m.names.contains_key(name) {
                    Some(VfsOp::Append {
                        name: name.to_string(),
                        off: m.inner.len(name)?,
                        data: data.to_vec(),
                    })
                } else {
                    None
                })
            },
            |m| m.append(name, data),
        )
    }

    fn read(&self, name: &str) -> Result<Vec<u8>> {
        self.reading(|| format!("reading {name}"), |v| v.read(name))
    }

    fn len(&self, name: &str) -> Result<u64> {
        self.reading(|| format!("reading the length of {name}"), |v| v.len(name))
    }

    fn truncate(&self, name: &str, len: u64) -> Result<()> {
        self.ticking(
            OpKind::VfsWrite,
            || format!("truncating {name}"),
            |_| {
                Ok(Some(VfsOp::Truncate {
                    name: name.to_string(),
                    len,
                }))
            },
            |m| m.truncate(name, len),
        )
    }

    fn sync(&self, name: &str) -> Result<()> {
        self.ticking(
            OpKind::VfsSync,
            || format!("syncing {name}"),
            |_| Ok(None),
            |m| m.sync(name),
        )
    }

    fn rename(&self, from: &str, to: &str) -> Result<()> {
        self.ticking(
            OpKind::VfsWrite,
            || format!("renaming {from} to {to}"),
            |_| {
                Ok(Some(VfsOp::Rename {
                    from: from.to_string(),
                    to: to.to_string(),
                }))
            },
            |m| m.rename(from, to),
        )
    }

    fn remove(&self, name: &str) -> Result<()> {
        self.ticking(
            OpKind::VfsWrite,
            || format!("removing {name}"),
            |_| Ok(Some(VfsOp::Remove(name.to_string()))),
            |m| m.remove(name),
        )
    }

    fn exists(&self, name: &str) -> Result<bool> {
        self.reading(|| format!("looking up {name}"), |v| v.exists(name))
    }

    fn list(&self) -> Result<Vec<String>> {
        self.reading(|| "listing the directory".to_string(), |v| v.list())
    }

    fn sync_dir(&self) -> Result<()> {
        self.ticking(
            OpKind::VfsSync,
            || "syncing the directory".to_string(),
            |_| Ok(None),
            |m| m.sync_dir(),
        )
    }
}
