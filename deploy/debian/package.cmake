# The Debian package (scripts/build-deb.sh, the `deb` preset): memtrimd,
# memtrimd-daemon, the web module and TLS shims, the preload agent, the
# systemd unit and /etc/default/memtrimd.
#
# CPack rather than a debian/ directory: the package holds exactly what the
# install rules install (nothing listed a second time), its version is
# project()'s, and it builds in its own build directory with dpkg-dev alone
# (dpkg-shlibdeps computes Depends from the binaries). What debhelper would
# have written, the three maintainer scripts beside this file, is short.
#
# MEMTRIMD_INSTALL_SYSTEMD is off by default because its destinations are
# absolute (/lib/systemd/system, /etc/default): a plain `cmake --install
# --prefix DIR` must not write into the machine's /etc.
option(MEMTRIMD_INSTALL_SYSTEMD "Install the systemd unit and /etc/default/memtrimd (the .deb)" OFF)

if(MEMTRIMD_INSTALL_SYSTEMD)
  # The unit in deploy/systemd runs /usr/local/bin/memtrimd (cmake --install's
  # default prefix, the image); the packaged one runs the installed binary.
  file(READ ${PROJECT_SOURCE_DIR}/deploy/systemd/memtrimd.service memtrimd_unit)
  string(REPLACE "ExecStart=/usr/local/bin/memtrimd"
                 "ExecStart=${CMAKE_INSTALL_PREFIX}/bin/memtrimd" memtrimd_unit "${memtrimd_unit}")
  if(NOT memtrimd_unit MATCHES "\nExecStart=${CMAKE_INSTALL_PREFIX}/bin/memtrimd\n")
    message(FATAL_ERROR "deploy/systemd/memtrimd.service: no ExecStart=/usr/local/bin/memtrimd to rewrite")
  endif()
  file(WRITE ${PROJECT_BINARY_DIR}/deploy/memtrimd.service "${memtrimd_unit}")
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
               ${PROJECT_SOURCE_DIR}/deploy/systemd/memtrimd.service)
  # /lib, not /usr/lib: where Debian 12's packages put units (merged /usr
  # makes them the same directory, but dpkg tracks the name it was given).
  install(FILES ${PROJECT_BINARY_DIR}/deploy/memtrimd.service DESTINATION /lib/systemd/system)
  install(FILES ${PROJECT_SOURCE_DIR}/deploy/systemd/memtrimd.default
          DESTINATION /etc/default RENAME memtrimd)
endif()

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME memtrimd)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "memtrimd maintainers <memtrimd@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "native memory metrics and malloc_trim for a JVM or glibc process")
# dpkg shows the description as written: lines under 80 columns.
set(CPACK_PACKAGE_DESCRIPTION
    "memtrimd watches one process's native memory from outside (smaps, glibc\n\
arena heaps, malloc statistics, JVM NMT through the attach socket), makes\n\
its glibc heap give free pages back on a schedule and serves Prometheus\n\
metrics. The package holds the program, the LD_PRELOAD agent for glibc\n\
targets and a systemd unit, installed but not enabled: choose the target\n\
and its user first.")
# The unit and /etc/default/memtrimd live outside the prefix: DESTDIR staging
# keeps the absolute destinations inside the package.
set(CPACK_SET_DESTDIR ON)
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${PROJECT_SOURCE_DIR}/deploy/debian/conffiles
    ${PROJECT_SOURCE_DIR}/deploy/debian/postinst
    ${PROJECT_SOURCE_DIR}/deploy/debian/prerm
    ${PROJECT_SOURCE_DIR}/deploy/debian/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
