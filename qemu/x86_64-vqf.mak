# Devices of the minimal x86_64 QEMU that scripts/build-qemu.sh builds with
# --without-default-devices: only what tests/qemu's guests use (the "pc"
# machine's own devices, and the defaults it creates unless told not to -
# VGA, a parallel port - so that command lines written for Debian's QEMU
# work unchanged; virtio-pci and vhost-user-fs).
CONFIG_I440FX=y
CONFIG_VGA_PCI=y
CONFIG_PARALLEL=y
CONFIG_VIRTIO_PCI=y
CONFIG_VHOST_USER_FS=y
