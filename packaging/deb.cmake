# The Debian package of dtrain (cmake --build BUILD --target package, or scripts/package, which
# configures a portable build with CMAKE_INSTALL_PREFIX=/usr): everything `cmake --install`
# installs, plus compressed man pages, the copyright and changelog, and maintainer scripts that
# create the group dtrain and register the unit without enabling or starting it.

# Man pages and the changelog, compressed reproducibly (gzip -9n), as Debian installs them.
set(DTRAIN_GZIPPED "")
foreach(page dtrain.1 dtrain-job.toml.5 dtrain-sweep.toml.5 dtraind.8)
  string(REGEX REPLACE ".*\\.([0-9])$" "\\1" section ${page})
  add_custom_command(OUTPUT ${PROJECT_BINARY_DIR}/man/${page}.gz
                     COMMAND ${CMAKE_COMMAND} -E make_directory ${PROJECT_BINARY_DIR}/man
                     COMMAND gzip -9n -c ${PROJECT_SOURCE_DIR}/man/${page} > ${PROJECT_BINARY_DIR}/man/${page}.gz
                     DEPENDS ${PROJECT_SOURCE_DIR}/man/${page})
  list(APPEND DTRAIN_GZIPPED ${PROJECT_BINARY_DIR}/man/${page}.gz)
  install(FILES ${PROJECT_BINARY_DIR}/man/${page}.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man${section})
endforeach()
add_custom_command(OUTPUT ${PROJECT_BINARY_DIR}/changelog.Debian.gz
                   COMMAND gzip -9n -c ${PROJECT_SOURCE_DIR}/packaging/changelog > ${PROJECT_BINARY_DIR}/changelog.Debian.gz
                   DEPENDS ${PROJECT_SOURCE_DIR}/packaging/changelog)
list(APPEND DTRAIN_GZIPPED ${PROJECT_BINARY_DIR}/changelog.Debian.gz)
add_custom_target(dtrain_gzipped ALL DEPENDS ${DTRAIN_GZIPPED})
install(FILES ${PROJECT_BINARY_DIR}/changelog.Debian.gz packaging/copyright
        DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/dtrain)

# Files under /etc are the administrator's: dpkg keeps their changes (conffiles).
file(WRITE ${PROJECT_BINARY_DIR}/deb/conffiles "${CMAKE_INSTALL_FULL_SYSCONFDIR}/dtrain/dtraind.toml\n")
foreach(script postinst prerm postrm)
  configure_file(packaging/${script} ${PROJECT_BINARY_DIR}/deb/${script} COPYONLY)
endforeach()

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME dtrain)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)  # the packaging's revision: dtrain_0.1.0-1_amd64.deb
set(CPACK_PACKAGE_CONTACT "dtrain developers <maintainers@users.noreply.a-seed-d6e59469.example>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "train machine-learning models across the machines of a lab")
# The extended description; CPack puts the summary above it and indents every line.
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
    "dtrain trains neural networks with data-parallel SGD, synchronous (ring
all-reduce or parameter servers) or asynchronous (Downpour SGD), over the
machines of a lab. A researcher writes a job file and submits it with
`dtrain submit'; the daemon dtraind queues it, runs its processes as that
user on this host and its peers, and keeps every job's state, logs, metrics
and checkpoints in SQLite.")
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
# dpkg-shlibdeps finds the libraries the binaries link; libdnnl2 (oneDNN, whose kernels run the
# convolutions where they are faster) and libgomp1 (its OpenMP threads) are named as well, so the
# package says it needs them even where a tool lists only the declared ones.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser, libdnnl2, libgomp1")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${PROJECT_BINARY_DIR}/deb/conffiles ${PROJECT_BINARY_DIR}/deb/postinst
    ${PROJECT_BINARY_DIR}/deb/prerm ${PROJECT_BINARY_DIR}/deb/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)
set(CPACK_STRIP_FILES TRUE)
# The package holds the files where this build installs them (scripts/package: /usr, so /etc).
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_SOURCE_IGNORE_FILES "/build.*/;/\\\\.git/")
include(CPack)
